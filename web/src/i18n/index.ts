// The UI's languages: every string a page shows comes from a catalogue
// (`locales/<language>/<namespace>.json`) through i18next. Only the
// active language's catalogue is fetched, as a chunk of its own, so the
// first load carries one language; switching loads the other before the
// page re-renders, without a reload. zh-CN has no fallback: a unit test
// keeps its keys equal to English's.

import i18next from 'i18next';
import resourcesToBackend from 'i18next-resources-to-backend';
import { initReactI18next } from 'react-i18next';
import { remembered } from '../lib/remembered';

/** The languages a user can choose, each named in itself. */
export const LANGUAGES = [
  { code: 'en', name: 'English' },
  { code: 'zh-CN', name: '简体中文' },
] as const;

export type Language = (typeof LANGUAGES)[number]['code'];

/**
 * The pseudo-locale: English with every catalogue string wrapped in
 * ⟦…⟧, so a page rendered in it shows at once any text that did not come
 * from the catalogue (the browser test fails on it). Chosen only by a
 * browser whose language is exactly `en-XA`, the reserved pseudo-locale.
 */
export const PSEUDO = 'en-XA';

/** The catalogue's namespaces, one per area of the UI. */
export const NAMESPACES = [
  'common',
  'dags',
  'dag',
  'run',
  'task',
  'editor',
  'datasets',
  'runners',
  'alerts',
  'audit',
  'backfill',
  'trigger',
  'signin',
  'problems',
] as const;

const STORAGE_KEY = 'datajump.language';

type Catalogue = Record<string, unknown>;

/** Every namespace of one language, as one chunk. */
const CATALOGUES: Record<Language, () => Promise<Record<string, Catalogue>>> = {
  en: () => import('./locales/en/index.ts').then((m) => m.default),
  'zh-CN': () => import('./locales/zh-CN/index.ts').then((m) => m.default),
};

/** `value` with every string in it wrapped in ⟦…⟧. */
export function pseudo(value: unknown): unknown {
  if (typeof value === 'string') return `⟦${value}⟧`;
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, pseudo(v)]));
  }
  return value;
}

/**
 * The language to start in: the one the user chose before, else the first
 * of the browser's languages we have (any `zh` is zh-CN), else English.
 */
export function pickLanguage(stored: string | null, browser: readonly string[]): Language | typeof PSEUDO {
  const known = (code: string | null): Language | undefined => LANGUAGES.find((l) => l.code === code)?.code;
  const chosen = known(stored);
  if (chosen) return chosen;
  for (const code of browser) {
    if (code === PSEUDO) return PSEUDO;
    if (code.toLowerCase().startsWith('zh')) return 'zh-CN';
    if (code.toLowerCase().startsWith('en')) return 'en';
  }
  return 'en';
}

const chosen = remembered(STORAGE_KEY, (code): code is Language => LANGUAGES.some((l) => l.code === code));

/** Switches the UI to `language` and remembers the choice. */
export async function chooseLanguage(language: Language): Promise<void> {
  chosen.set(language);
  await i18next.changeLanguage(language);
}

/** `<html lang>` follows the language, so the browser picks fonts and hyphenation. */
function followInDocument(language: string) {
  document.documentElement.lang = language === PSEUDO ? 'en' : language;
}

/** Loads the starting language's catalogue; the app renders after it. */
export async function initI18n(): Promise<void> {
  const language = pickLanguage(chosen.get(), navigator.languages ?? [navigator.language]);
  i18next.on('languageChanged', followInDocument);
  await i18next
    .use(
      resourcesToBackend(async (language: string, namespace: string) => {
        const catalogue = language === PSEUDO ? pseudo(await CATALOGUES.en()) : await CATALOGUES[language as Language]();
        return (catalogue as Record<string, Catalogue>)[namespace];
      }),
    )
    .use(initReactI18next)
    .init({
      lng: language,
      supportedLngs: [...LANGUAGES.map((l) => l.code), PSEUDO],
      fallbackLng: false,
      load: 'currentOnly',
      ns: [...NAMESPACES],
      defaultNS: 'common',
      interpolation: { escapeValue: false },
      react: { useSuspense: false },
      returnNull: false,
    });
}

/** The active language, as the catalogue knows it. */
export function currentLanguage(): string {
  return i18next.resolvedLanguage ?? i18next.language ?? 'en';
}
