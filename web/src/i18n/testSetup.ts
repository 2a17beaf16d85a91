// Unit tests render in English, from the catalogue loaded at once.
import i18next from 'i18next';
import { initReactI18next } from 'react-i18next';
import en from './locales/en/index.ts';

await i18next.use(initReactI18next).init({
  lng: 'en',
  fallbackLng: false,
  resources: { en },
  defaultNS: 'common',
  interpolation: { escapeValue: false },
  react: { useSuspense: false },
});
