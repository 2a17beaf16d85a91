import { useState } from 'react';
import type { DagDetail } from '../../api/types';

export function DefinitionTab({ dag }: { dag: DagDetail }) {
  const [copied, setCopied] = useState(false);
  const text = JSON.stringify(dag, null, 2);
  return (
    <div>
      {dag.sourceFile ? (
        <div className="banner banner-info">
          This DAG is managed by the file <code>{dag.sourceFile}</code>: change the file and apply it again
          (<code>datajump dag apply -f …</code>). Edits through the API are refused.
        </div>
      ) : (
        <div className="banner banner-plain">
          Made through the API: edit it on the canvas, or send the definition with{' '}
          <code>PUT /api/v1/dags/{dag.id}</code>.
        </div>
      )}
      <div className="code-head">
        <span className="muted small">GET /api/v1/dags/{dag.id}</span>
        <button
          type="button"
          className="btn btn-sm"
          onClick={() => {
            void navigator.clipboard?.writeText(text).then(() => setCopied(true));
          }}
        >
          {copied ? 'Copied' : 'Copy JSON'}
        </button>
      </div>
      <pre className="code" data-testid="definition-json">{text}</pre>
    </div>
  );
}
