import { defineConfig } from '@playwright/test';

// End-to-end tests drive a real Chromium (Debian's, not a downloaded one)
// against the UI served by a running DataJump; e2e/global-setup.ts starts it.
export default defineConfig({
  testDir: 'e2e',
  outputDir: 'test-results',
  workers: 1,
  globalSetup: './e2e/global-setup.ts',
  use: {
    viewport: { width: 1440, height: 900 },
  },
  projects: [
    {
      name: 'chromium',
      use: {
        browserName: 'chromium',
        viewport: { width: 1440, height: 900 },
        launchOptions: {
          executablePath: process.env.DATAJUMP_CHROMIUM ?? '/usr/bin/chromium',
        },
      },
    },
  ],
});
