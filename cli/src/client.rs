//! Direct database access, for what runs beside the roles rather than
//! through the API: `datajump up` applying the DAG files of its folder, and
//! the operator commands `datasource`, `secret`, `token`, `project` and
//! `alerts`. Datasource
//! passwords and secret values are deliberately not exposed over HTTP, so
//! these commands need the database (`DATAJUMP_DATABASE_URL`); every user
//! command goes through the API instead ([`crate::api`]).

use std::time::Duration;

use anyhow::{Context, Result, bail};
use chrono::Utc;
use datajump_shared::access::{Reach, Role};
use datajump_shared::dag_file::DagFile;
use datajump_shared::entities::{alert, project};
use datajump_store::catalog::{self, ApplyReport};
use datajump_store::{alerts, audit, projects, sessions, tokens};
use sea_orm::{DatabaseConnection, EntityTrait};

use crate::Global;

/// A database connection for operator commands.
pub struct Client {
    db: DatabaseConnection,
    global: Global,
}

impl Client {
    /// Connects to the database (and migrates it, so a fresh file works).
    pub async fn connect(global: &Global) -> Result<Client> {
        let db = crate::commands::roles::database(global).await?;
        Ok(Client::with_database(db, global))
    }

    /// A client over an already open (and migrated) database.
    pub fn with_database(db: DatabaseConnection, global: &Global) -> Client {
        Client {
            db,
            global: global.clone(),
        }
    }

    /// Stores the DAG of the file at `path`, which then owns its
    /// definition ([`catalog::Origin::File`]); tells tickers when schedules
    /// changed.
    pub async fn apply(&self, file: &DagFile, path: &std::path::Path) -> Result<ApplyReport> {
        let source = source_file(path);
        let report = catalog::apply(
            &self.db,
            file,
            &self.global.timezone,
            catalog::Origin::File(&source),
        )
        .await?;
        if report.schedules_touched() {
            self.notify_schedules_changed().await;
        }
        Ok(report)
    }

    /// Tells running tickers to reload schedules now (they also reload on a timer).
    /// Best effort, for two seconds at most: NATS may be down.
    pub async fn notify_schedules_changed(&self) {
        let notify = async {
            let client = datajump_nats::connect_with(
                &self.global.nats_url,
                "datajump-cli",
                &self.global.nats_auth(),
            )
            .await
            .ok()?;
            client
                .publish(self.global.nats_prefix.schedules_changed(), "".into())
                .await
                .ok()?;
            client.flush().await.ok()
        };
        let _ = tokio::time::timeout(Duration::from_secs(2), notify).await;
    }

    // ----- datasources (`datajump datasource …`) -----

    /// Stores a new datasource for the tasks of `project_id`.
    pub async fn add_datasource(
        &self,
        project_id: i64,
        new: datajump_shared::datasources::NewDatasource,
    ) -> Result<datajump_shared::entities::datasource::Model> {
        let name = new.name.clone();
        let row = datajump_store::datasources::add(&self.db, project_id, new).await?;
        self.audit("datasource add", &format!("{name} (project {project_id})"))
            .await;
        Ok(row)
    }

    /// The datasource `name` with its password opened, to try connecting.
    pub async fn datasource_for_test(
        &self,
        name: &str,
    ) -> Result<Option<datajump_shared::entities::datasource::Model>> {
        let Some(row) = datajump_store::datasources::by_name(&self.db, name).await? else {
            return Ok(None);
        };
        Ok(datajump_store::datasources::for_connection(&self.db, row.project_id, name).await?)
    }

    /// Every datasource, by name.
    pub async fn datasources(&self) -> Result<Vec<datajump_shared::entities::datasource::Model>> {
        Ok(datajump_store::datasources::list(&self.db).await?)
    }

    /// Removes a datasource.
    pub async fn remove_datasource(&self, name: &str) -> Result<()> {
        datajump_store::datasources::remove(&self.db, name).await?;
        self.audit("datasource remove", name).await;
        Ok(())
    }

    // ----- alerts (`datajump alerts …`) -----

    /// Records a test alert per webhook of `dag_name` and sends each one now
    /// (unless a ticker took it first, then waits for the ticker's attempt);
    /// returns the alerts as they ended.
    pub async fn test_alerts(
        &self,
        dag_name: &str,
        network: &std::sync::Arc<datajump_shared::network::NetworkPolicy>,
    ) -> Result<Vec<alert::Model>> {
        let dag = catalog::dag_by_name(&self.db, dag_name).await?;
        let Some(recorded) = alerts::record_test(&self.db, &dag, Utc::now()).await? else {
            bail!("DAG {dag_name} has no alerts: add an `alerts:` block with webhooks to its file");
        };
        self.audit("alerts test", dag_name).await;
        let mut ended = Vec::with_capacity(recorded.len());
        for row in recorded {
            if alerts::take(&self.db, &row, Utc::now()).await? {
                datajump_ticker::alerts::send_taken(&self.db, network, &row).await?;
            }
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            loop {
                let now = alert::Entity::find_by_id(row.id)
                    .one(&self.db)
                    .await?
                    .with_context(|| format!("alert {} vanished", row.id))?;
                if now.attempts > 0 || tokio::time::Instant::now() >= deadline {
                    ended.push(now);
                    break;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        Ok(ended)
    }

    /// A DAG's most recent alerts.
    pub async fn alerts(&self, dag_name: &str, limit: u64) -> Result<Vec<alert::Model>> {
        let dag = catalog::dag_by_name(&self.db, dag_name).await?;
        Ok(alerts::list(&self.db, dag.id, 0, limit).await?)
    }

    // ----- secrets (`datajump secret …`) -----

    /// Creates or replaces a secret of `project_id`.
    pub async fn set_secret(
        &self,
        project_id: i64,
        name: &str,
        value: &str,
        description: Option<&str>,
    ) -> Result<datajump_store::secrets::SetOutcome> {
        let outcome =
            datajump_store::secrets::set(&self.db, project_id, name, value, description).await?;
        self.audit("secret set", &format!("{name} (project {project_id})"))
            .await;
        Ok(outcome)
    }

    /// Every secret, without values.
    pub async fn secrets(&self) -> Result<Vec<datajump_store::secrets::SecretInfo>> {
        Ok(datajump_store::secrets::list(&self.db).await?)
    }

    /// Removes a secret.
    pub async fn remove_secret(&self, name: &str) -> Result<()> {
        datajump_store::secrets::remove(&self.db, name).await?;
        self.audit("secret remove", name).await;
        Ok(())
    }

    /// Re-seals every secret value and datasource password under `new`.
    pub async fn rotate_secret_key(
        &self,
        old: Option<&datajump_store::sealing::SecretKey>,
        new: &datajump_store::sealing::SecretKey,
    ) -> Result<datajump_store::secrets::Resealed> {
        let resealed = datajump_store::secrets::rotate_key(&self.db, old, new).await?;
        self.audit(
            "secret rotate-key",
            &format!(
                "{} secrets, {} passwords",
                resealed.secrets, resealed.passwords
            ),
        )
        .await;
        Ok(resealed)
    }

    // ----- tokens (`datajump token …`) -----

    /// Creates an API token; the token itself is in the answer only.
    pub async fn create_token(
        &self,
        name: &str,
        role: Role,
        reach: Reach,
    ) -> Result<tokens::Created> {
        let created = tokens::create(&self.db, name, role, reach, &operator().0).await?;
        self.audit("token create", &format!("{name} ({role}, {reach})"))
            .await;
        Ok(created)
    }

    // ----- projects (`datajump project …`) -----

    /// The project `given` names by id or name.
    pub async fn resolve_project(&self, given: &str) -> Result<project::Model> {
        Ok(projects::resolve(&self.db, given).await?)
    }

    /// Creates a project.
    pub async fn create_project(&self, name: &str, description: &str) -> Result<project::Model> {
        let row = projects::create(&self.db, name, description).await?;
        self.audit("project create", &format!("{name} (id {})", row.id))
            .await;
        Ok(row)
    }

    /// Every project, by id.
    pub async fn projects(&self) -> Result<Vec<project::Model>> {
        Ok(projects::list(&self.db).await?)
    }

    /// Every API token (names and roles; tokens are not stored).
    pub async fn tokens(&self) -> Result<Vec<datajump_shared::entities::api_token::Model>> {
        Ok(tokens::list(&self.db).await?)
    }

    /// Revokes an API token.
    pub async fn revoke_token(&self, name: &str) -> Result<()> {
        let row = tokens::revoke(&self.db, name).await?;
        self.audit("token revoke", &format!("{name} ({})", row.role))
            .await;
        Ok(())
    }

    /// Ends every browser session; returns how many ended.
    pub async fn end_sessions(&self) -> Result<u64> {
        let ended = sessions::end_every(&self.db).await?;
        self.audit("sessions end", &format!("all ({ended})")).await;
        Ok(ended)
    }

    /// Writes the audit row of a change this command made, as the OS user
    /// running it. A failure is reported, not fatal: the change is made.
    async fn audit(&self, action: &str, target: &str) {
        let (actor, origin) = operator();
        let entry = audit::Entry {
            actor,
            role: Role::Admin.as_str().to_owned(),
            action: action.to_owned(),
            target: target.to_owned(),
            status: 0,
            origin,
        };
        if let Err(e) = audit::record(&self.db, entry).await {
            eprintln!("warning: the change was made but not written to the audit log: {e}");
        }
    }
}

/// Who runs this command, for the audit log: `os:<user>` and `cli@<host>`.
fn operator() -> (String, String) {
    let user = nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map_or_else(|| format!("uid {}", nix::unistd::getuid()), |u| u.name);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "unknown".to_owned());
    (format!("os:{user}"), format!("cli@{host}"))
}

/// How a DAG file's path is recorded as its owner: absolute, so that the
/// same file applied from two directories is one owner.
pub fn source_file(path: &std::path::Path) -> String {
    std::fs::canonicalize(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}
