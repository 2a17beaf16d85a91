import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { settingsOf } from './canvasModel';
import { DagSettingsPanel } from './DagSettingsPanel';

afterEach(cleanup);

describe('the DAG settings panel', () => {
  const settings = {
    ...settingsOf(null),
    name: 'd',
    params: [
      { name: 'env', value: 'prod' },
      { name: 'env', value: 'dev' },
    ],
  };

  it('flags each row of a duplicate name and edits rows', () => {
    const onChange = vi.fn();
    render(<DagSettingsPanel dag={null} settings={settings} taskCount={0} onChange={onChange} onOnline={() => {}} readOnly={false} />);
    expect(screen.getAllByTestId('dag-param-error').map((e) => e.textContent)).toEqual([
      "another parameter is named 'env'",
      "another parameter is named 'env'",
    ]);
    fireEvent.change(screen.getAllByTestId('dag-param-name')[1]!, { target: { value: 'region' } });
    expect(onChange).toHaveBeenLastCalledWith({
      params: [
        { name: 'env', value: 'prod' },
        { name: 'region', value: 'dev' },
      ],
    });
    fireEvent.click(screen.getAllByTestId('dag-param-remove')[0]!);
    expect(onChange).toHaveBeenLastCalledWith({ params: [{ name: 'env', value: 'dev' }] });
    fireEvent.click(screen.getByTestId('dag-param-add'));
    expect(onChange).toHaveBeenLastCalledWith({ params: [...settings.params, { name: '', value: '' }] });
  });

  it('says when max active runs is not a whole number of at least 1', () => {
    render(<DagSettingsPanel dag={null} settings={{ ...settings, params: [], maxActiveRuns: '0' }} taskCount={0} onChange={() => {}} onOnline={() => {}} readOnly={false} />);
    expect(screen.getByTestId('dag-max-active-runs').getAttribute('aria-invalid')).toBe('true');
    expect(screen.queryAllByTestId('dag-param-error')).toHaveLength(0);
  });
});
