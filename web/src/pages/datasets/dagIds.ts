import { listDags } from '../../api/endpoints';
import { useAsync } from '../../lib/hooks';

/** DAG ids by name, for linking the names a dataset's lineage carries. */
export function useDagIds(): Map<string, number> {
  const dags = useAsync('dataset-dags', (signal) => listDags({ pageSize: 500 }, { signal }));
  return new Map((dags.data?.items ?? []).map((d) => [d.name, d.id]));
}
