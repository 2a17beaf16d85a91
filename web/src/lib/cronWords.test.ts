import { describe, expect, it } from 'vitest';
import { describeCron } from './cronWords';

describe('cron descriptions in the reader’s language', () => {
  it('keeps the server’s English for English readers', () => {
    expect(describeCron('0 0 2 * * ?', 'at 02:00 every day', 'en')).toEqual({ text: 'at 02:00 every day', fromServer: true });
    expect(describeCron('0 0 2 * * ?', 'at 02:00 every day', 'en-XA')?.fromServer).toBe(true);
  });

  it('says it in Chinese for Chinese readers, with the dialect’s Sunday', () => {
    const daily = describeCron('0 30 8 ? * MON-FRI', 'english', 'zh-CN');
    expect(daily?.fromServer).toBe(false);
    expect(daily?.text).toContain('08:30');
    expect(daily?.text).toContain('星期一');
    // Quartz (with `?`): 1 is Sunday; Unix: 1 is Monday.
    expect(describeCron('0 0 9 ? * 1', 'english', 'zh-CN')?.text).toContain('星期日');
    expect(describeCron('0 9 * * 1', 'english', 'zh-CN')?.text).toContain('星期一');
  });

  it('falls back to the server’s words for what cronstrue cannot read', () => {
    expect(describeCron('not a cron', 'the server’s words', 'zh-CN')).toEqual({ text: 'the server’s words', fromServer: true });
    expect(describeCron(null, null, 'zh-CN')).toBeNull();
  });
});
