import { describe, expect, it } from 'vitest';
import { pickLanguage, pseudo } from './index';
import en from './locales/en/index.ts';
import zh from './locales/zh-CN/index.ts';

/** Every key path of a catalogue with its string. */
function leaves(value: unknown, path = ''): Map<string, string> {
  const out = new Map<string, string>();
  if (typeof value === 'string') out.set(path, value);
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      for (const [p, s] of leaves(v, path ? `${path}.${k}` : k)) out.set(p, s);
    }
  }
  return out;
}

/** The `{{name}}` placeholders of a string, sorted. */
const placeholders = (s: string) => [...s.matchAll(/\{\{\s*(\w+)[^}]*\}\}/g)].map((m) => m[1]).sort();

/** English keys without their plural suffix: zh-CN has one form where English has two. */
const pluralBase = (key: string) => key.replace(/_(zero|one|two|few|many|other)$/, '');

describe('the catalogues', () => {
  const english = leaves(en);
  const chinese = leaves(zh);

  it('have the same namespaces', () => {
    expect(Object.keys(zh).sort()).toEqual(Object.keys(en).sort());
  });

  it('give every English key a Chinese string, with the same placeholders', () => {
    const chineseBases = new Set([...chinese.keys()].map(pluralBase));
    const missing = [...english.keys()].filter((k) => !chinese.has(k) && !(k.endsWith('_one') && chineseBases.has(pluralBase(k))));
    expect(missing).toEqual([]);
    for (const [key, text] of chinese) {
      const source = english.get(key) ?? english.get(`${pluralBase(key)}_other`);
      expect(source, `${key} is not in English`).toBeDefined();
      expect(placeholders(text), key).toEqual(placeholders(source ?? ''));
      expect(text.trim(), key).not.toBe('');
    }
  });

  it('wrap every string in the pseudo-locale', () => {
    expect(pseudo({ a: 'x {{n}}', b: { c: 'y' } })).toEqual({ a: '⟦x {{n}}⟧', b: { c: '⟦y⟧' } });
  });
});

describe('the starting language', () => {
  it('is the one chosen before, else the browser’s, else English', () => {
    expect(pickLanguage('zh-CN', ['en-US'])).toBe('zh-CN');
    expect(pickLanguage(null, ['zh-TW', 'en'])).toBe('zh-CN');
    expect(pickLanguage(null, ['fr-FR', 'en-GB'])).toBe('en');
    expect(pickLanguage(null, ['fr-FR'])).toBe('en');
    expect(pickLanguage('klingon', ['en-XA'])).toBe('en-XA');
  });
});
