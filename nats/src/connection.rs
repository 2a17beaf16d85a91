//! Connecting to NATS: the credentials and TLS a client uses, and the
//! retrying connect every role starts with.

use crate::NatsError;

/// How a client proves who it is to NATS, and the TLS it uses. Empty (the
/// default) is an anonymous plain connection, what a local nats-server
/// started by `datajump up` takes.
#[derive(Clone, Default)]
pub struct NatsAuth {
    /// A user and password (`--nats-user`, `DATAJUMP_NATS_PASSWORD`).
    pub user_password: Option<(String, String)>,
    /// A token (`DATAJUMP_NATS_TOKEN`).
    pub token: Option<String>,
    /// A `.creds` file: a user JWT and its NKey seed (`--nats-creds`).
    pub creds_file: Option<std::path::PathBuf>,
    /// A file holding an NKey seed (`--nats-nkey`).
    pub nkey_seed_file: Option<std::path::PathBuf>,
    /// CA certificates to trust (`--nats-tls-ca`).
    pub tls_ca: Option<std::path::PathBuf>,
    /// A client certificate and its key (`--nats-tls-cert`, `--nats-tls-key`).
    pub tls_client: Option<(std::path::PathBuf, std::path::PathBuf)>,
    /// Refuse a connection without TLS (`--nats-require-tls`).
    pub require_tls: bool,
}

impl std::fmt::Debug for NatsAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsAuth")
            .field("user", &self.user_password.as_ref().map(|(user, _)| user))
            .field("token", &self.token.as_ref().map(|_| "***"))
            .field("creds_file", &self.creds_file)
            .field("nkey_seed_file", &self.nkey_seed_file)
            .field("tls_ca", &self.tls_ca)
            .field("tls_client", &self.tls_client)
            .field("require_tls", &self.require_tls)
            .finish()
    }
}

impl NatsAuth {
    /// `options` with these credentials and TLS settings.
    async fn apply(
        &self,
        mut options: async_nats::ConnectOptions,
    ) -> Result<async_nats::ConnectOptions, NatsError> {
        if let Some((user, password)) = &self.user_password {
            options = options.user_and_password(user.clone(), password.clone());
        }
        if let Some(token) = &self.token {
            options = options.token(token.clone());
        }
        if let Some(path) = &self.creds_file {
            options =
                options
                    .credentials_file(path)
                    .await
                    .map_err(|source| NatsError::Credentials {
                        path: path.clone(),
                        source,
                    })?;
        }
        if let Some(path) = &self.nkey_seed_file {
            let seed = std::fs::read_to_string(path).map_err(|source| NatsError::Credentials {
                path: path.clone(),
                source,
            })?;
            options = options.nkey(seed.trim().to_owned());
        }
        if let Some(ca) = &self.tls_ca {
            options = options.add_root_certificates(ca.clone());
        }
        if let Some((cert, key)) = &self.tls_client {
            options = options.add_client_certificate(cert.clone(), key.clone());
        }
        Ok(options.require_tls(self.require_tls))
    }
}

/// Connects anonymously to a comma-separated list of NATS URLs, retrying
/// until it answers.
pub async fn connect(urls: &str, name: &str) -> Result<async_nats::Client, NatsError> {
    connect_with(urls, name, &NatsAuth::default()).await
}

/// Connects to a comma-separated list of NATS URLs with `auth`, retrying
/// until it answers.
pub async fn connect_with(
    urls: &str,
    name: &str,
    auth: &NatsAuth,
) -> Result<async_nats::Client, NatsError> {
    let addrs: Vec<async_nats::ServerAddr> = urls
        .split(',')
        .map(|u| u.trim().parse())
        .collect::<Result<_, _>>()
        .map_err(|e: std::io::Error| NatsError::Connect {
            url: urls.to_owned(),
            source: async_nats::ConnectError::with_source(
                async_nats::ConnectErrorKind::ServerParse,
                e,
            ),
        })?;
    auth.apply(async_nats::ConnectOptions::new())
        .await?
        .name(name)
        .retry_on_initial_connect()
        .connect(addrs)
        .await
        .map_err(|source| NatsError::Connect {
            url: urls.to_owned(),
            source,
        })
}
