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
  const refreshing = document.querySelector('[data-refresh-seconds][id]');
  if (refreshing) keepUpdated(refreshing);
  const focusTarget = document.querySelector('.error-summary, #new-key, #new-secret');
  if (focusTarget) focusTarget.focus();
});

// A progress section fetches its page again and takes the new content in place: the document
// stays (a reader keeps their place, the role="status" region announces the change), and it stops
// once the new page no longer asks to be updated. Should the fetch fail, the page reloads instead.
function keepUpdated(section) {
  setTimeout(async () => {
    try {
      const response = await fetch(window.location.href, { headers: { accept: 'text/html' } });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const page = new DOMParser().parseFromString(await response.text(), 'text/html');
      const next = page.getElementById(section.id);
      if (!next) throw new Error('the section is gone');
      if (next.innerHTML !== section.innerHTML) takeContent(section, next);
      if (next.dataset.refreshSeconds) keepUpdated(section);
      else delete section.dataset.refreshSeconds;
    } catch {
      window.location.reload();
    }
  }, Number(section.dataset.refreshSeconds) * 1000);
}

// The status region stays the same element (a region taken out of the document announces nothing):
// its content is swapped, and the section's other children are put around it.
function takeContent(section, next) {
  const status = section.querySelector(':scope > [role="status"]');
  const nextStatus = next.querySelector(':scope > [role="status"]');
  if (!status || !nextStatus) return section.replaceChildren(...next.childNodes);
  for (const node of [...section.childNodes]) if (node !== status) node.remove();
  while (next.firstChild !== nextStatus) status.before(next.firstChild);
  status.replaceChildren(...nextStatus.childNodes);
  nextStatus.remove();
  status.after(...next.childNodes);
}
