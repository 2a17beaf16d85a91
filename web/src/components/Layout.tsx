import { useState } from 'react';
import { useTranslation } from 'react-i18next';
import { NavLink, Outlet, useLocation, useNavigate } from 'react-router';
import { useCan, useSession, useSessionContext } from '../auth/session';
import { chooseLanguage, LANGUAGES, type Language } from '../i18n';
import { chooseTheme, type ThemeChoice, useThemeChoice } from '../lib/theme';
import { browserTimeZone, chooseTimeZone, timeZones, useTimeZone } from '../lib/timeZone';
import { useStreamStatus } from '../live/stream';

function LiveIndicator() {
  const { t } = useTranslation();
  const status = useStreamStatus();
  const state = t(`live.${status}`);
  return (
    <span className={`live live-${status}`} title={t('live.title', { state })}>
      <span className="live-dot" aria-hidden />
      {state}
    </span>
  );
}

/** English / 简体中文: each language named in itself, so anyone finds theirs. */
function LanguageSwitch() {
  const { t, i18n } = useTranslation();
  return (
    <select
      className="language-switch"
      aria-label={t('language.label')}
      data-testid="language"
      value={i18n.resolvedLanguage}
      onChange={(e) => void chooseLanguage(e.target.value as Language)}
    >
      {LANGUAGES.map((language) => (
        <option key={language.code} value={language.code} lang={language.code} translate="no">
          {language.name}
        </option>
      ))}
    </select>
  );
}

/** The zone every time is shown in: the browser's unless the user picks one. */
function TimeZoneSwitch() {
  const { t } = useTranslation();
  const zone = useTimeZone();
  const browser = browserTimeZone();
  return (
    <select
      className="language-switch zone-switch"
      aria-label={t('timeZone.label')}
      title={t('timeZone.label')}
      data-testid="time-zone"
      value={zone === browser ? '' : zone}
      onChange={(e) => chooseTimeZone(e.target.value || null)}
    >
      <option value="">{t('timeZone.browser', { zone: browser })}</option>
      {timeZones().map((z) => (
        <option key={z} value={z} translate="no">
          {z}
        </option>
      ))}
    </select>
  );
}

const THEMES: ThemeChoice[] = ['system', 'light', 'dark'];

/** Light, dark, or whatever the system says. */
function ThemeSwitch() {
  const { t } = useTranslation();
  const choice = useThemeChoice();
  return (
    <select
      className="language-switch"
      aria-label={t('theme.label')}
      title={t('theme.label')}
      data-testid="theme"
      value={choice}
      onChange={(e) => chooseTheme(e.target.value as ThemeChoice)}
    >
      {THEMES.map((theme) => (
        <option key={theme} value={theme}>
          {t(`theme.${theme}`)}
        </option>
      ))}
    </select>
  );
}

export function Layout() {
  const { t } = useTranslation();
  const session = useSession();
  const { signOut } = useSessionContext();
  const navigate = useNavigate();
  const audit = useCan('viewAudit');
  // A page drawn again from scratch in a newly chosen zone.
  const zone = useTimeZone();
  const link = ({ isActive }: { isActive: boolean }) => `nav-link${isActive ? ' active' : ''}`;
  // On a narrow screen the navigation and the switches fold into a menu.
  // It belongs to the page it was opened on, so going to another closes it.
  const location = useLocation();
  const [menuOpenOn, setMenuOpenOn] = useState<string | null>(null);
  const menuOpen = menuOpenOn === location.key;
  return (
    <div className="app">
      <header
        className={`topbar${menuOpen ? ' menu-open' : ''}`}
        onKeyDown={(e) => {
          if (e.key === 'Escape') setMenuOpenOn(null);
        }}
      >
        <NavLink to="/dags" className="brand" translate="no">
          <span className="brand-mark" aria-hidden>
            ◆
          </span>
          DataJump
        </NavLink>
        <LiveIndicator />
        <button
          type="button"
          className="menu-button"
          aria-label={t('nav.menu')}
          aria-expanded={menuOpen}
          aria-controls="topbar-menu"
          data-testid="menu-button"
          onClick={() => setMenuOpenOn(menuOpen ? null : location.key)}
        >
          <span className="menu-icon" aria-hidden />
        </button>
        <div className="topbar-menu" id="topbar-menu">
          <nav className="nav" aria-label={t('nav.main')}>
            <NavLink to="/dags" className={link}>
              {t('nav.dags')}
            </NavLink>
            <NavLink to="/datasets" className={link}>
              {t('nav.datasets')}
            </NavLink>
            <NavLink to="/runners" className={link}>
              {t('nav.runners')}
            </NavLink>
            <NavLink to="/alerts" className={link}>
              {t('nav.alerts')}
            </NavLink>
            {audit && (
              <NavLink to="/audit" className={link}>
                {t('nav.audit')}
              </NavLink>
            )}
          </nav>
          <div className="topbar-right">
            <LanguageSwitch />
            <TimeZoneSwitch />
            <ThemeSwitch />
            {session && (
              <span
                className="whoami"
                data-testid="whoami"
                title={session.projectId ? t('session.project', { id: session.projectId }) : t('session.everyProject')}
              >
                <span className="whoami-name" translate="no">
                  {session.name}
                </span>{' '}
                <span className={`role role-${session.role}`}>{t(`session.roles.${session.role}`)}</span>
              </span>
            )}
            {session?.tokensRequired && (
              <button
                type="button"
                className="btn btn-sm btn-ghost-dark"
                data-testid="sign-out"
                onClick={() => {
                  void signOut().finally(() => navigate('/signin'));
                }}
              >
                {t('session.signOut')}
              </button>
            )}
          </div>
        </div>
      </header>
      <main className="main">
        <Outlet key={zone} />
      </main>
    </div>
  );
}
