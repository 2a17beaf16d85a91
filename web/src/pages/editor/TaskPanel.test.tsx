import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import { useState } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import type { TaskDef } from '../../api/types';
import { TaskPanel } from './TaskPanel';

afterEach(cleanup);

/** The panel over a task kept in state, as the editor keeps it; `saved` is what the editor would send. */
function renderPanel(initial: TaskDef) {
  const saved: { task: TaskDef } = { task: initial };
  function Harness() {
    const [task, setTask] = useState(initial);
    return (
      <TaskPanel
        task={task}
        branches={[]}
        problems={[]}
        onChange={(next) => {
          saved.task = next;
          setTask(next);
        }}
        onDelete={() => {}}
        readOnly={false}
      />
    );
  }
  render(<Harness />);
  return saved;
}

describe('the map fields of the task panel', () => {
  it('maps a task over an upstream output with its limits, and unmaps it', () => {
    const saved = renderPanel({ name: 'load_table', type: 'SHELL', command: 'load "$DJ_MAP_ITEM"' });
    expect(screen.queryByTestId('task-map-over')).toBeNull();
    fireEvent.click(screen.getByTestId('task-map'));
    fireEvent.change(screen.getByTestId('task-map-over'), { target: { value: ' ${list_tables.output.tables} ' } });
    fireEvent.change(screen.getByTestId('task-map-max-parallel'), { target: { value: '8' } });
    fireEvent.change(screen.getByTestId('task-map-max-items'), { target: { value: '5000' } });
    expect(saved.task.map).toEqual({ over: '${list_tables.output.tables}', maxParallel: 8, maxItems: 5000 });
    fireEvent.change(screen.getByTestId('task-map-max-items'), { target: { value: '' } });
    expect(saved.task.map).toEqual({ over: '${list_tables.output.tables}', maxParallel: 8 });
    fireEvent.click(screen.getByTestId('task-map'));
    expect(saved.task.map).toBeUndefined();
    expect(screen.queryByTestId('task-map-over')).toBeNull();
  });

  it('takes a list written out as JSON, and keeps the last good list while the text is not one', () => {
    const saved = renderPanel({ name: 'load_table', type: 'SHELL', command: 'true', map: { over: ['a'] } });
    const over = screen.getByTestId('task-map-over') as HTMLInputElement;
    expect(over.value).toBe('["a"]');
    fireEvent.change(over, { target: { value: '["orders", 7, true]' } });
    expect(saved.task.map?.over).toEqual(['orders', 7, true]);
    fireEvent.change(over, { target: { value: '["orders", ' } });
    expect(screen.getByTestId('task-map-over-error').textContent).toMatch(/^not JSON yet: /);
    expect(saved.task.map?.over).toEqual(['orders', 7, true]);
    fireEvent.change(over, { target: { value: '[1, 2]' } });
    expect(saved.task.map?.over).toEqual([1, 2]);
    expect(screen.queryByTestId('task-map-over-error')).toBeNull();
  });

  it('offers no map on a SWITCH', () => {
    renderPanel({ name: 'route', type: 'SWITCH', cases: [{ when: 'true', then: [] }] });
    expect(screen.queryByTestId('task-map')).toBeNull();
  });
});
