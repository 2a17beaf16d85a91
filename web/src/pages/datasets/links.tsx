import { Link } from 'react-router';

/** A DAG's name, linked to its page when it is known. */
export function DagLink({ name, ids }: { name: string; ids: Map<string, number> }) {
  const id = ids.get(name);
  return id === undefined ? (
    <span translate="no">{name}</span>
  ) : (
    <Link to={`/dags/${id}`} translate="no">
      {name}
    </Link>
  );
}
