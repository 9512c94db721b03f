// Passkeys need the browser's WebAuthn API, so they are the one part of the app that needs this
// script (and simplewebauthn-browser.js, loaded before it). A form marked `data-passkey` asks the
// service for a challenge (`data-options`), lets the browser create or use a passkey, puts the
// result in the form's hidden `response` field and submits the form as usual.
document.addEventListener('DOMContentLoaded', () => {
  const webauthn = window.SimpleWebAuthnBrowser;
  for (const form of document.querySelectorAll('form[data-passkey]')) {
    const status = document.getElementById(form.dataset.status);
    const say = (message) => {
      if (status) status.textContent = message;
    };
    if (!webauthn?.browserSupportsWebAuthn()) {
      say('This browser cannot use passkeys.');
      continue;
    }
    form.hidden = false;
    const button = form.querySelector('button[type="submit"]');
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      button.disabled = true;
      say('Follow your browser’s instructions to use your passkey…');
      try {
        const answer = await fetch(form.dataset.options, {
          method: 'POST',
          credentials: 'same-origin',
          headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ _csrf: form.elements._csrf.value }),
        });
        if (!answer.ok) throw new Error(`the service answered ${answer.status}`);
        const optionsJSON = await answer.json();
        const credential =
          form.dataset.passkey === 'register'
            ? await webauthn.startRegistration({ optionsJSON })
            : await webauthn.startAuthentication({ optionsJSON });
        form.elements.response.value = JSON.stringify(credential);
        say('Checking your passkey…');
        form.submit();
      } catch (error) {
        button.disabled = false;
        say(messageFor(error));
      }
    });
  }
});

function messageFor(error) {
  if (error?.code === 'ERROR_AUTHENTICATOR_PREVIOUSLY_REGISTERED') {
    return 'This device already has a passkey for your account.';
  }
  if (error?.name === 'NotAllowedError') return 'The passkey request was cancelled or timed out. Try again.';
  return 'Your passkey could not be used. Reload the page and try again.';
}
