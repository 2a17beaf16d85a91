import i18next from 'i18next';
import { afterEach, describe, expect, it } from 'vitest';
import zhProblems from '../i18n/locales/zh-CN/problems.json';
import { sayProblem } from './problem';

const outOfRange = {
  code: 'cron.out_of_range',
  params: { expr: '0 60 * * * ?', field: 'minute', value: '60', min: '0', max: '59' },
};

describe('server problems in the reader’s words', () => {
  afterEach(async () => {
    await i18next.changeLanguage('en');
  });

  it('says a known code with its values, naming the field in words', () => {
    expect(sayProblem(outOfRange, 'english')).toBe('minute field: 60 is out of range 0–59.');
  });

  it('says a stored reason with its values, naming a status in words', () => {
    expect(sayProblem({ code: 'attempt.exit_code', params: { code: '3' } }, 'exit code 3')).toBe('Exit code 3.');
    expect(sayProblem({ code: 'task.marked', params: { status: 'SUCCESS' } }, 'marked SUCCESS by a user')).toBe(
      'Marked success by a user.',
    );
  });

  it('says a DAG file’s problem after its place: a task, a schedule or a field', () => {
    expect(
      sayProblem({ code: 'dag.unknown_dependency', params: { task: 'load', parent: 'extract' } }, 'english'),
    ).toBe("Task 'load': depends on 'extract', which is not a task of this DAG.");
    expect(sayProblem({ ...outOfRange, params: { ...outOfRange.params, schedule: 'nightly' } }, 'english')).toBe(
      "Schedule 'nightly': minute field: 60 is out of range 0–59.",
    );
    expect(
      sayProblem(
        { code: 'dag.unknown_field_near', params: { path: 'tasks[0]', field: 'comand', suggestion: 'command' } },
        'english',
      ),
    ).toBe('tasks[0]: unknown field `comand`: did you mean `command`?');
  });

  it('keeps the server’s English for a code the catalogue lacks, or none', () => {
    expect(sayProblem({ code: 'dag.something_new', params: {} }, 'the server said so')).toBe('the server said so');
    expect(sayProblem(null, 'the server said so')).toBe('the server said so');
  });

  it('says it in Chinese when the reader reads Chinese', async () => {
    i18next.addResourceBundle('zh-CN', 'problems', zhProblems);
    await i18next.changeLanguage('zh-CN');
    expect(sayProblem(outOfRange, 'english')).toBe('「分钟」字段：60 超出范围 0–59。');
    expect(sayProblem({ code: 'timezone.unknown', params: { name: 'Mars/Olympus' } }, 'english')).toContain('Mars/Olympus');
    expect(sayProblem({ code: 'dag.cycle', params: { cycle: 'a → b → a' } }, 'english')).toBe(
      '任务之间循环等待：a → b → a。',
    );
    expect(sayProblem({ code: 'dag.depends_on_itself', params: { task: 'a' } }, 'english')).toBe('任务「a」：依赖了自己。');
  });
});
