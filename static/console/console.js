/* The console's one script. A narrow window folds a list's filters, so its first row shows
   without scrolling; the fold opens with a click (templates/admin/change_list.html). */
'use strict';
document.addEventListener('DOMContentLoaded', () => {
  if (!window.matchMedia('(max-width: 1100px)').matches) return;
  for (const fold of document.querySelectorAll('details.console-filters')) fold.removeAttribute('open');
});
