import { Trans, useTranslation } from 'react-i18next';
import { Link } from 'react-router';

export function NotFoundPage() {
  const { t } = useTranslation();
  return (
    <div className="page">
      <h1>{t('notFound.title')}</h1>
      <p>
        <Trans t={t} i18nKey="notFound.text" components={{ dags: <Link to="/dags" /> }} />
      </p>
    </div>
  );
}
