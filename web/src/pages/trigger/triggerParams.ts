// Which parameters a trigger sends: only those the user changed or added.
// A DAG's own defaults are not sent back as trigger params, since the API
// refuses trigger params that a task pastes into a script unquoted.

export interface ParamRow {
  name: string;
  value: string;
  /** The DAG's default, for a parameter the DAG declares. */
  default?: string;
}

export function paramsToSend(rows: ParamRow[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const row of rows) {
    const name = row.name.trim();
    if (!name) continue;
    if (row.default !== undefined && row.value === row.default) continue;
    out[name] = row.value;
  }
  return out;
}
