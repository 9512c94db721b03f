// Progressive enhancement only: every page works without this file.
document.addEventListener('DOMContentLoaded', () => {
  for (const button of document.querySelectorAll('button[data-copy]')) {
    const source = document.getElementById(button.dataset.copy);
    const status = button.closest('section')?.querySelector('.copy-status');
    if (!source) continue;
    button.hidden = false;
    button.addEventListener('click', async () => {
      try {
        await navigator.clipboard.writeText(source.textContent.trim());
        if (status) status.textContent = 'Copied to the clipboard.';
      } catch {
        window.getSelection()?.selectAllChildren(source);
        if (status) status.textContent = 'Selected: press Ctrl+C (or ⌘C) to copy.';
      }
    });
  }
  for (const button of document.querySelectorAll('button[data-confirm]')) {
    button.addEventListener('click', (event) => {
      if (!window.confirm(button.dataset.confirm)) event.preventDefault();
    });
  }
  const refreshing = document.querySelector('[data-refresh-seconds]');
  if (refreshing)
    setTimeout(() => window.location.reload(), Number(refreshing.dataset.refreshSeconds) * 1000);
  const focusTarget = document.querySelector('.error-summary, #new-key, #new-secret');
  if (focusTarget) focusTarget.focus();
});
