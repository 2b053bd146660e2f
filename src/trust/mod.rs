//! Signing and verifying the beacon (issue 34): the one place rrr touches
//! keys. The origin loads its `--sign-key` (an OpenSSH ed25519 private key
//! without passphrase, as `ssh-keygen -t ed25519 -N ''` makes it) once at
//! start and signs each beacon it writes in the SSHSIG format with
//! namespace `rrr` (`ssh-keygen -Y verify -n rrr` accepts it); a mirror
//! loads its `--trust-key` public keys (repeatable, for rotation) and
//! verifies a beacon against them. All cryptography is RustCrypto's
//! `ssh-key` crate (ed25519-dalek, sha2): none is written here. The format
//! and the rules a mirror applies are the pure `recentfile::beacon`.

use anyhow::{bail, Context, Result};
use recentfile::beacon::SIG_NAMESPACE;
use ssh_key::{Algorithm, HashAlg, LineEnding, PrivateKey, PublicKey, SshSig};
use std::fmt;
use std::path::{Path, PathBuf};

/// The largest signature file a reader parses (an ed25519 SSHSIG is ~300 bytes).
pub const MAX_SIG_BYTES: usize = 16 * 1024;

/// An origin's signing key, loaded and checked at start.
#[derive(Clone)]
pub struct SignKey {
    key: PrivateKey,
    file: PathBuf,
}

impl fmt::Debug for SignKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SignKey({}, {})", self.file.display(), self.fingerprint())
    }
}

impl SignKey {
    /// Load `file`: missing, unreadable, not an OpenSSH private key,
    /// encrypted, or not ed25519 is an error naming the file (exit 2 at
    /// start, never mid-batch).
    pub fn load(file: &Path) -> Result<SignKey> {
        let text = std::fs::read(file).with_context(|| format!("cannot read the signing key {}", file.display()))?;
        let key = PrivateKey::from_openssh(&text).map_err(|e| {
            anyhow::anyhow!(
                "{}: not an OpenSSH private key ({e}); make one with ssh-keygen -t ed25519 -N '' -f FILE",
                file.display()
            )
        })?;
        if key.is_encrypted() {
            bail!(
                "{}: the signing key is encrypted (has a passphrase); rrr signs unattended: \
                 use a key without one (ssh-keygen -t ed25519 -N '')",
                file.display()
            );
        }
        if key.algorithm() != Algorithm::Ed25519 {
            bail!(
                "{}: a {} key; rrr signs with ed25519 keys only (ssh-keygen -t ed25519)",
                file.display(),
                key.algorithm()
            );
        }
        Ok(SignKey { key, file: file.to_path_buf() })
    }

    /// The key's file.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// `SHA256:…` as ssh-keygen prints it.
    pub fn fingerprint(&self) -> String {
        self.key.fingerprint(HashAlg::Sha256).to_string()
    }

    /// The public half, as one `ssh-ed25519 AAAA… comment` line.
    pub fn public_line(&self) -> String {
        self.key.public_key().to_openssh().unwrap_or_default()
    }

    /// The armored SSHSIG of `msg` (namespace `rrr`, SHA-512 as ssh-keygen signs).
    pub fn sign(&self, msg: &[u8]) -> Result<String> {
        let sig = self
            .key
            .sign(SIG_NAMESPACE, HashAlg::Sha512, msg)
            .with_context(|| format!("cannot sign with {}", self.file.display()))?;
        sig.to_pem(LineEnding::LF).context("cannot encode the signature")
    }
}

/// The public keys a mirror trusts (`--trust-key`, repeatable).
#[derive(Clone, Debug, Default)]
pub struct TrustKeys {
    keys: Vec<(PublicKey, PathBuf)>,
}

impl TrustKeys {
    /// Load public key files: each non-empty, non-`#` line an OpenSSH public
    /// key (`ssh-ed25519 AAAA…`, as in `id_ed25519.pub`). Errors name the file and line.
    pub fn load(files: &[PathBuf]) -> Result<TrustKeys> {
        let mut keys = Vec::new();
        for file in files {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("cannot read the trusted key {}", file.display()))?;
            let before = keys.len();
            for (n, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let key = PublicKey::from_openssh(line)
                    .map_err(|e| anyhow::anyhow!("{}:{}: not an OpenSSH public key ({e})", file.display(), n + 1))?;
                if key.algorithm() != Algorithm::Ed25519 {
                    bail!("{}:{}: a {} key; rrr verifies ed25519 keys only", file.display(), n + 1, key.algorithm());
                }
                keys.push((key, file.clone()));
            }
            if keys.len() == before {
                bail!("{}: no public key in it", file.display());
            }
        }
        Ok(TrustKeys { keys })
    }

    /// Whether no key is trusted (nothing is verified).
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Verify the armored SSHSIG `sig` of `msg`: namespace `rrr`, made by
    /// one of the trusted keys. Returns that key's fingerprint.
    pub fn verify(&self, msg: &[u8], sig: &[u8]) -> Result<String, SignatureError> {
        if sig.len() > MAX_SIG_BYTES {
            return Err(SignatureError(format!("the signature has {} bytes, more than {MAX_SIG_BYTES}", sig.len())));
        }
        let sig = SshSig::from_pem(sig).map_err(|e| SignatureError(format!("not an SSH signature ({e})")))?;
        if sig.namespace() != SIG_NAMESPACE {
            return Err(SignatureError(format!("namespace {:?}, expected {SIG_NAMESPACE:?}", sig.namespace())));
        }
        let Some((key, _)) = self.keys.iter().find(|(k, _)| k.key_data() == sig.public_key()) else {
            let by = PublicKey::new(sig.public_key().clone(), "").fingerprint(HashAlg::Sha256);
            return Err(SignatureError(format!("made by key {by}, which is not a trusted key")));
        };
        key.verify(SIG_NAMESPACE, msg, &sig)
            .map_err(|e| SignatureError(format!("does not verify with the trusted key ({e})")))?;
        Ok(key.fingerprint(HashAlg::Sha256).to_string())
    }
}

/// A signature that does not verify (`check` CRITICAL "signature").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureError(pub String);

impl fmt::Display for SignatureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad signature: {}", self.0)
    }
}

impl std::error::Error for SignatureError {}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixed ed25519 key made by `ssh-keygen -t ed25519 -N ''` (test only).
    pub(crate) const TEST_KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
QyNTUxOQAAACBegn9aJJNL8vkJ6mEsqAK4FqqySJUneQRzmwlu4zHmlgAAAJBdR95RXUfe
UQAAAAtzc2gtZWQyNTUxOQAAACBegn9aJJNL8vkJ6mEsqAK4FqqySJUneQRzmwlu4zHmlg
AAAEC5t1mfTdK+gcJYQ8BsW6aM3VTN9YZkZftbGRfNf3n1qV6Cf1okk0vy+QnqYSyoArgW
qrJIlSd5BHObCW7jMeaWAAAACHJyci10ZXN0AQIDBAU=
-----END OPENSSH PRIVATE KEY-----
";

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn sign_and_verify() {
        let dir = tempfile::tempdir().unwrap();
        let key = SignKey::load(&write(dir.path(), "k", TEST_KEY)).unwrap();
        let public = write(dir.path(), "k.pub", &format!("# rotation\n{}\n", key.public_line()));
        let trust = TrustKeys::load(&[public]).unwrap();
        let sig = key.sign(b"beacon").unwrap();
        assert!(sig.starts_with("-----BEGIN SSH SIGNATURE-----\n"));
        assert_eq!(trust.verify(b"beacon", sig.as_bytes()), Ok(key.fingerprint()));
        // Another message, a mangled or foreign signature, another key.
        assert!(trust.verify(b"beacoN", sig.as_bytes()).unwrap_err().0.contains("does not verify"));
        assert!(trust.verify(b"beacon", b"garbage").unwrap_err().0.contains("not an SSH signature"));
        let other = PrivateKey::from_openssh(TEST_KEY).unwrap();
        let foreign = other.sign("git", HashAlg::Sha512, b"beacon").unwrap().to_pem(LineEnding::LF).unwrap();
        assert!(trust.verify(b"beacon", foreign.as_bytes()).unwrap_err().0.contains("namespace"));
        assert!(TrustKeys::default().verify(b"beacon", sig.as_bytes()).unwrap_err().0.contains("not a trusted key"));
    }

    #[test]
    fn bad_keys_are_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope");
        assert!(format!("{:#}", SignKey::load(&missing).unwrap_err()).contains("nope"));
        let junk = write(dir.path(), "junk", "hello\n");
        assert!(format!("{:#}", SignKey::load(&junk).unwrap_err()).contains("junk: not an OpenSSH private key"));
        let empty = write(dir.path(), "empty.pub", "# nothing\n");
        assert!(format!("{:#}", TrustKeys::load(&[empty]).unwrap_err()).contains("no public key"));
        let badpub = write(dir.path(), "bad.pub", "ssh-ed25519 AAAA!!\n");
        assert!(format!("{:#}", TrustKeys::load(&[badpub]).unwrap_err()).contains("bad.pub:1"));
    }
}
