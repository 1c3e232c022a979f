// The page's only script: it listens for "something changed" on /events
// and swaps the parts of the page that a fresh copy of it has changed —
// no reload, the search box and the scroll position kept.
(() => {
  const live = document.getElementById('live');
  const main = () => document.getElementById('main');
  const atBottom = () => window.innerHeight + window.scrollY >= document.body.scrollHeight - 40;

  let busy = false, again = false;
  async function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    try {
      const follow = atBottom();
      const res = await fetch(location.href, { cache: 'no-store' });
      const doc = new DOMParser().parseFromString(await res.text(), 'text/html');
      for (const id of ['side', 'main']) {
        const now = document.getElementById(id), next = doc.getElementById(id);
        if (now && next) now.replaceWith(document.adoptNode(next));
      }
      if (follow) window.scrollTo(0, document.body.scrollHeight);
      document.body.dataset.refreshed = String((Number(document.body.dataset.refreshed) || 0) + 1);
    } catch (e) {
      // The server went away; the event stream says when it is back.
    } finally {
      busy = false;
      if (again) { again = false; refresh(); }
    }
  }

  const events = new EventSource('/events');
  events.addEventListener('ready', () => { live.className = 'on'; live.title = 'live updates: on'; });
  events.addEventListener('change', refresh);
  events.onerror = () => { live.className = ''; live.title = 'live updates: reconnecting'; };

  if (!location.hash && main() && main().querySelector('.threads')) window.scrollTo(0, document.body.scrollHeight);
})();
