export type Theme = 'light' | 'dark';

export const currentTheme = (): Theme => (document.documentElement.classList.contains('dark') ? 'dark' : 'light');

/** Switches the theme and remembers it (index.html applies it before the first paint). */
export function setTheme(theme: Theme): void {
  document.documentElement.classList.toggle('dark', theme === 'dark');
  try {
    localStorage.setItem('theme', theme);
  } catch {
    // Private mode: this page only.
  }
}
