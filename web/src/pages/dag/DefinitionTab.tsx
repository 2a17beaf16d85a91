import { useState } from 'react';
import { Trans, useTranslation } from 'react-i18next';
import type { DagDetail } from '../../api/types';

export function DefinitionTab({ dag }: { dag: DagDetail }) {
  const { t } = useTranslation('dag');
  const [copied, setCopied] = useState(false);
  const text = JSON.stringify(dag, null, 2);
  return (
    <div>
      {dag.sourceFile ? (
        <div className="banner banner-info">
          <Trans
            t={t}
            i18nKey="definition.fileManaged"
            values={{ file: dag.sourceFile, command: 'datajump dag apply -f …' }}
            components={{ file: <code translate="no" />, cmd: <code translate="no" /> }}
          />
        </div>
      ) : (
        <div className="banner banner-plain">
          <Trans
            t={t}
            i18nKey="definition.madeByApi"
            values={{ request: `PUT /api/v1/dags/${dag.id}` }}
            components={{ req: <code translate="no" /> }}
          />
        </div>
      )}
      <div className="code-head">
        <span className="muted small" translate="no">
          GET /api/v1/dags/{dag.id}
        </span>
        <button
          type="button"
          className="btn btn-sm"
          onClick={() => {
            void navigator.clipboard?.writeText(text).then(() => setCopied(true));
          }}
        >
          {copied ? t('definition.copied') : t('definition.copyJson')}
        </button>
      </div>
      <pre className="code" data-testid="definition-json" translate="no">
        {text}
      </pre>
    </div>
  );
}
