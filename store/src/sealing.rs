//! Secret values and datasource passwords at rest: sealed with AES-256-GCM
//! under the installation's secret key before they are written, opened
//! when a runner or a ticker needs them.
//!
//! The key comes from `DATAJUMP_SECRET_KEY` (32 bytes, base64 or hex), or
//! the file `DATAJUMP_SECRET_KEY_FILE` names, or `secret.key` in the data
//! folder (`DATAJUMP_DATA_DIR`, default `./.datajump`), which `datajump up`
//! creates on first start. It is resolved once per process by the binary
//! ([`configure`]); library code asks [`current`], so neither the runner's
//! nor the ticker's configuration has to carry it. With no key at all,
//! values are stored as given (and the commands that write them say so),
//! which keeps the local trial and older databases working: a stored value
//! without the `dj1:` prefix is read as plain text.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rand::RngCore;
use thiserror::Error;

/// What a sealed value starts with: the format's version.
const PREFIX: &str = "dj1:";
/// The nonce length AES-GCM takes.
const NONCE_LEN: usize = 12;

/// Why a key or a sealed value cannot be used.
#[derive(Debug, Error)]
pub enum SealError {
    /// The configured key is not 32 bytes in base64 or hex.
    #[error("{origin}: a secret key is 32 bytes written in base64 (44 characters) or hex (64)")]
    BadKey {
        /// Where it came from.
        origin: String,
    },
    /// The key file could not be read or written.
    #[error("secret key file {path}: {source}")]
    KeyFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A sealed value and no key to open it.
    #[error(
        "a stored value is encrypted and this process has no secret key: set DATAJUMP_SECRET_KEY \
         (or DATAJUMP_SECRET_KEY_FILE) to the key the value was stored with"
    )]
    NoKey,
    /// The value was sealed with another key, or altered.
    #[error(
        "a stored value cannot be decrypted with this process's secret key (it was stored with \
         another key, or altered)"
    )]
    WrongKey,
}

/// The installation's 256-bit secret key. `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretKey([u8; 32]);

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretKey(***)")
    }
}

impl SecretKey {
    /// A new random key.
    pub fn generate() -> SecretKey {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        SecretKey(bytes)
    }

    /// The key as base64, the form the environment variable and the key
    /// file take.
    pub fn encode(&self) -> String {
        STANDARD.encode(self.0)
    }

    /// Reads a key written in base64 or hex; `origin` names where it came
    /// from, for the error.
    pub fn parse(text: &str, origin: &str) -> Result<SecretKey, SealError> {
        let text = text.trim();
        let bad = || SealError::BadKey {
            origin: origin.to_owned(),
        };
        let bytes = if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
            (0..32)
                .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|_| bad()))
                .collect::<Result<Vec<u8>, _>>()?
        } else {
            STANDARD.decode(text).map_err(|_| bad())?
        };
        Ok(SecretKey(bytes.try_into().map_err(|_| bad())?))
    }

    /// Reads the key file at `path`.
    pub fn read(path: &Path) -> Result<SecretKey, SealError> {
        let text = std::fs::read_to_string(path).map_err(|source| SealError::KeyFile {
            path: path.to_owned(),
            source,
        })?;
        SecretKey::parse(&text, &path.display().to_string())
    }

    /// Writes the key to `path`, readable by its owner only.
    pub fn write(&self, path: &Path) -> Result<(), SealError> {
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        let error = |source| SealError::KeyFile {
            path: path.to_owned(),
            source,
        };
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)
            .map_err(error)?;
        file.write_all(format!("{}\n", self.encode()).as_bytes())
            .map_err(error)
    }

    fn cipher(&self) -> Aes256Gcm {
        Aes256Gcm::new((&self.0).into())
    }

    /// `plain` sealed: `dj1:` and base64 of a random nonce and the
    /// ciphertext with its tag.
    pub fn seal(&self, plain: &str) -> String {
        let mut nonce = [0u8; NONCE_LEN];
        rand::rng().fill_bytes(&mut nonce);
        // Encryption with a valid key and nonce length cannot fail.
        let sealed = self
            .cipher()
            .encrypt(Nonce::from_slice(&nonce), plain.as_bytes())
            .unwrap_or_default();
        let mut out = nonce.to_vec();
        out.extend(sealed);
        format!("{PREFIX}{}", STANDARD.encode(out))
    }
}

/// Whether `stored` is a sealed value.
pub fn is_sealed(stored: &str) -> bool {
    stored.starts_with(PREFIX)
}

/// `stored` opened with `key`: a sealed value decrypted, a plain one as it
/// is.
pub fn open_with(key: Option<&SecretKey>, stored: &str) -> Result<String, SealError> {
    let Some(sealed) = stored.strip_prefix(PREFIX) else {
        return Ok(stored.to_owned());
    };
    let key = key.ok_or(SealError::NoKey)?;
    let bytes = STANDARD.decode(sealed).map_err(|_| SealError::WrongKey)?;
    if bytes.len() < NONCE_LEN {
        return Err(SealError::WrongKey);
    }
    let (nonce, ciphertext) = bytes.split_at(NONCE_LEN);
    let plain = key
        .cipher()
        .decrypt(Nonce::from_slice(nonce), ciphertext)
        .map_err(|_| SealError::WrongKey)?;
    String::from_utf8(plain).map_err(|_| SealError::WrongKey)
}

/// `stored` opened with this process's key ([`current`]).
pub fn open(stored: &str) -> Result<String, SealError> {
    open_with(current(), stored)
}

/// `plain` as it is stored: sealed when this process has a key.
pub fn seal(plain: &str) -> String {
    match current() {
        Some(key) => key.seal(plain),
        None => plain.to_owned(),
    }
}

static KEY: OnceLock<Option<SecretKey>> = OnceLock::new();

/// Sets this process's key, once, before any value is read or written;
/// later calls change nothing. Returns the key in effect.
pub fn configure(key: Option<SecretKey>) -> Option<&'static SecretKey> {
    KEY.get_or_init(|| key).as_ref()
}

/// This process's key, if one was configured.
pub fn current() -> Option<&'static SecretKey> {
    KEY.get().and_then(Option::as_ref)
}

/// Where the key comes from when nothing else is configured:
/// `secret.key` in `data_dir`.
pub fn default_key_file(data_dir: &Path) -> PathBuf {
    data_dir.join("secret.key")
}

/// The key the environment configures: `DATAJUMP_SECRET_KEY`, the file
/// `DATAJUMP_SECRET_KEY_FILE` names, or `secret.key` in `data_dir` if that
/// file exists.
pub fn key_from_environment(data_dir: &Path) -> Result<Option<SecretKey>, SealError> {
    if let Ok(text) = std::env::var("DATAJUMP_SECRET_KEY")
        && !text.trim().is_empty()
    {
        return SecretKey::parse(&text, "DATAJUMP_SECRET_KEY").map(Some);
    }
    if let Ok(path) = std::env::var("DATAJUMP_SECRET_KEY_FILE")
        && !path.trim().is_empty()
    {
        return SecretKey::read(Path::new(&path)).map(Some);
    }
    let default = default_key_file(data_dir);
    if default.exists() {
        return SecretKey::read(&default).map(Some);
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_values_open_with_their_key_only() {
        let key = SecretKey::generate();
        let sealed = key.seal("hunter2");
        assert!(
            is_sealed(&sealed) && !sealed.contains("hunter2"),
            "{sealed}"
        );
        assert_ne!(sealed, key.seal("hunter2"), "a fresh nonce each time");
        assert_eq!(open_with(Some(&key), &sealed).unwrap(), "hunter2");
        assert!(matches!(
            open_with(Some(&SecretKey::generate()), &sealed),
            Err(SealError::WrongKey)
        ));
        assert!(matches!(open_with(None, &sealed), Err(SealError::NoKey)));
        assert_eq!(open_with(None, "plain-old").unwrap(), "plain-old");
        let mut altered = sealed.clone();
        altered.pop();
        altered.push('A');
        assert!(open_with(Some(&key), &altered).is_err());
    }

    #[test]
    fn keys_read_in_base64_or_hex() {
        let key = SecretKey::generate();
        assert_eq!(SecretKey::parse(&key.encode(), "t").unwrap(), key);
        let hex: String = key.0.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(SecretKey::parse(&hex, "t").unwrap(), key);
        assert!(SecretKey::parse("short", "t").is_err());
        assert!(format!("{key:?}").contains("***"));
    }
}
