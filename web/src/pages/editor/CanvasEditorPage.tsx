import { useTranslation } from 'react-i18next';
import { Link, useParams } from 'react-router';
import { getCanvas, getDag } from '../../api/endpoints';
import { useCan } from '../../auth/session';
import { ErrorBox, Loading } from '../../components/States';
import { useAsync } from '../../lib/hooks';
import { Editor } from './Editor';

/** `/dags/new` and `/dags/:dagId/edit`. */
export function CanvasEditorPage() {
  const { t } = useTranslation('editor');
  const param = useParams().dagId;
  const dagId = param ? Number(param) : null;
  const allowed = useCan('editDag');
  const dag = useAsync(allowed && dagId ? `dag:${dagId}` : null, (signal) => getDag(dagId!, { signal }));
  const canvas = useAsync(allowed && dagId ? `canvas:${dagId}` : null, (signal) => getCanvas(dagId!, { signal }));

  if (!allowed) {
    return (
      <div className="page">
        <ErrorBox title={t('page.notAllowed')} error={new Error(t('page.needsAdmin'))} />
        {dagId && <Link to={`/dags/${dagId}`}>{t('page.backToDag')}</Link>}
      </div>
    );
  }
  if (dagId === null) return <Editor key="new" dag={null} canvas={null} />;
  if (!dag.data || !canvas.data) {
    const error = dag.error ?? canvas.error;
    return (
      <div className="page">
        {error ? (
          <ErrorBox
            error={error}
            onRetry={() => {
              dag.reload();
              canvas.reload();
            }}
          />
        ) : (
          <Loading label={t('page.loading')} />
        )}
      </div>
    );
  }
  return <Editor key={dagId} dag={dag.data} canvas={canvas.data} />;
}
