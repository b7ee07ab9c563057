/* global document, localStorage, matchMedia */
// The theme before the first paint (no flash): the saved choice, else the system's.
try {
  const t = localStorage.getItem('theme');
  if (t === 'dark' || (t !== 'light' && matchMedia('(prefers-color-scheme: dark)').matches)) document.documentElement.classList.add('dark');
} catch {
  // Storage refused (private mode): the light theme.
}
