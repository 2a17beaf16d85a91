// Catalogue keys are checked at build time against the English catalogue.
import 'i18next';
import type common from './locales/en/common.json';
import type dags from './locales/en/dags.json';
import type dag from './locales/en/dag.json';
import type run from './locales/en/run.json';
import type task from './locales/en/task.json';
import type editor from './locales/en/editor.json';
import type datasets from './locales/en/datasets.json';
import type runners from './locales/en/runners.json';
import type alerts from './locales/en/alerts.json';
import type audit from './locales/en/audit.json';
import type backfill from './locales/en/backfill.json';
import type trigger from './locales/en/trigger.json';
import type signin from './locales/en/signin.json';
import type problems from './locales/en/problems.json';

declare module 'i18next' {
  interface CustomTypeOptions {
    defaultNS: 'common';
    resources: {
      common: typeof common;
      dags: typeof dags;
      dag: typeof dag;
      run: typeof run;
      task: typeof task;
      editor: typeof editor;
      datasets: typeof datasets;
      runners: typeof runners;
      alerts: typeof alerts;
      audit: typeof audit;
      backfill: typeof backfill;
      trigger: typeof trigger;
      signin: typeof signin;
      problems: typeof problems;
    };
  }
}
