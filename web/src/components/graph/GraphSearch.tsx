// The graph's search box: what it finds is highlighted by the graph; Enter
// centres the next match, Escape empties it.

import { useTranslation } from 'react-i18next';

export function GraphSearch({
  query,
  found,
  onQuery,
  onNext,
}: {
  query: string;
  found: number;
  onQuery: (query: string) => void;
  onNext: () => void;
}) {
  const { t } = useTranslation('dag');
  return (
    <span className="graph-search">
      <input
        type="search"
        className="input"
        value={query}
        placeholder={t('graph.search.placeholder')}
        aria-label={t('graph.search.placeholder')}
        title={t('graph.search.title')}
        data-testid="graph-search"
        onChange={(e) => onQuery(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter') {
            e.preventDefault();
            onNext();
          } else if (e.key === 'Escape' && query) {
            // Clears the search only; a second Escape clears the highlight.
            e.stopPropagation();
            onQuery('');
          }
        }}
      />
      {query.trim() && (
        <span className={`small ${found ? 'muted' : 'inline-error'}`} data-testid="graph-search-count">
          {found ? t('graph.search.matches', { count: found }) : t('graph.search.none')}
        </span>
      )}
    </span>
  );
}
