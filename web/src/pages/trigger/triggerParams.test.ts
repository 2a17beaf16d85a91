import { describe, expect, it } from 'vitest';
import { paramsToSend } from './triggerParams';

describe('trigger params', () => {
  it('sends only changed and added parameters', () => {
    expect(
      paramsToSend([
        { name: 'region', value: 'cn', default: 'cn' },
        { name: 'rows', value: '5', default: '10' },
        { name: 'extra', value: 'x' },
        { name: '  ', value: 'ignored' },
      ]),
    ).toEqual({ rows: '5', extra: 'x' });
  });
});
