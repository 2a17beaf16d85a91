// Light or dark: the user's choice, remembered in this browser, else the
// system's, followed as it changes. Applied as `data-theme` on <html>,
// which app.css reads.

import { remembered } from './remembered';

export type ThemeChoice = 'system' | 'light' | 'dark';

const picked = remembered('datajump.theme', (v): v is 'light' | 'dark' => v === 'light' || v === 'dark');
const systemDark = () => typeof window.matchMedia === 'function' && window.matchMedia('(prefers-color-scheme: dark)').matches;

function apply() {
  const choice = picked.get();
  const dark = choice === 'dark' || (choice === null && systemDark());
  document.documentElement.dataset.theme = dark ? 'dark' : 'light';
}

/** Applies the remembered theme and follows the system's while it is the choice; call once at start. */
export function startTheme() {
  apply();
  if (typeof window.matchMedia === 'function') {
    window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', apply);
  }
}

/** Uses `next` from now on, and remembers it. */
export function chooseTheme(next: ThemeChoice) {
  picked.set(next === 'system' ? null : next);
  apply();
}

/** The user's choice, re-rendering the caller when it changes. */
export function useThemeChoice(): ThemeChoice {
  return picked.use() ?? 'system';
}
