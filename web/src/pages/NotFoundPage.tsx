import { Link } from 'react-router';

export function NotFoundPage() {
  return (
    <div className="page">
      <h1>Not found</h1>
      <p>
        There is no page here. <Link to="/dags">Go to the DAGs</Link>.
      </p>
    </div>
  );
}
