// Light or dark: the system's by default, the user's choice remembered.

import { type Page, expect, test } from '@playwright/test';
import { base, shot, signIn } from './support';

/** How light the page's background is, 0 (black) to 255 (white). */
async function backgroundLightness(page: Page): Promise<number> {
  return page.evaluate(() => {
    const [r = 0, g = 0, b = 0] = (getComputedStyle(document.body).backgroundColor.match(/\d+/g) ?? []).map(Number);
    return Math.round(0.2126 * r + 0.7152 * g + 0.0722 * b);
  });
}

test('the theme follows the system until the user picks one, and the pick is remembered', async ({ browser }) => {
  const context = await browser.newContext({ colorScheme: 'dark', viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  await signIn(page, 'ADMIN');
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'dark');
  expect(await backgroundLightness(page)).toBeLessThan(60);
  await shot(page, '23-dags-dark');
  await page.goto(`${base()}/runners`);
  await expect(page.getByTestId('runner-row')).toHaveCount(1);
  await shot(page, '24-runners-dark');

  await page.getByTestId('theme').selectOption('light');
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'light');
  expect(await backgroundLightness(page)).toBeGreaterThan(200);
  await page.reload();
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'light');
  await page.getByTestId('theme').selectOption('system');
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'dark');
  await context.close();
});
