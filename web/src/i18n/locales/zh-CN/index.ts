// Simplified Chinese, every namespace in one chunk.
const files = import.meta.glob<Record<string, unknown>>('./*.json', { eager: true, import: 'default' });

export default Object.fromEntries(
  Object.entries(files).map(([path, catalogue]) => [path.replace(/^\.\/(.*)\.json$/, '$1'), catalogue]),
);
