// Progressive enhancement of upload forms (`form[data-upload-progress]`): sends the form with
// XMLHttpRequest to show the upload's progress. Without this file the form posts as usual.
document.addEventListener('DOMContentLoaded', () => {
  for (const form of document.querySelectorAll('form[data-upload-progress]')) {
    const box = form.querySelector('.upload-progress');
    const bar = box?.querySelector('progress');
    const status = box?.querySelector('[role="status"]');
    const button = form.querySelector('button[type="submit"]');
    if (!box || !bar || !status || !button) continue;
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const request = new XMLHttpRequest();
      request.open('POST', form.action);
      request.upload.addEventListener('progress', (progress) => {
        if (!progress.lengthComputable) return;
        const percent = Math.floor((progress.loaded / progress.total) * 100);
        bar.value = percent;
        status.textContent = percent < 100 ? `Uploading: ${percent}%` : 'Checking the files…';
      });
      request.addEventListener('load', () => {
        // Added: follow the redirect's page. Refused: show the answer, as a plain post would.
        if (
          request.status < 400 &&
          request.responseURL &&
          new URL(request.responseURL).pathname !== new URL(form.action).pathname
        ) {
          window.location.assign(request.responseURL);
          return;
        }
        document.open();
        document.write(request.responseText);
        document.close();
      });
      request.addEventListener('error', () => {
        button.disabled = false;
        status.textContent = 'The upload failed: check the connection and try again.';
      });
      box.hidden = false;
      button.disabled = true;
      status.textContent = 'Uploading: 0%';
      request.send(new FormData(form));
    });
  }
});
