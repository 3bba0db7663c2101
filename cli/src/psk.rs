//! The pre-shared key a client or an agent proves itself with: from a file, else from the
//! environment.

use ringperf_control::auth::{Psk, PSK_ENV};
use ringperf_core::Error;

use crate::args::TestArgs;

/// The client's key: --psk-file, else RINGPERF_PSK, else none.
pub fn client_psk(t: &TestArgs) -> Result<Option<Psk>, Error> {
    psk_from(t.psk_file.as_deref())
}

/// The key in `file`, else RINGPERF_PSK, else none.
pub fn psk_from(file: Option<&std::path::Path>) -> Result<Option<Psk>, Error> {
    if let Some(path) = file {
        return Psk::from_file(path).map(Some);
    }
    match std::env::var(PSK_ENV) {
        Ok(v) if !v.is_empty() => Psk::from_secret(&v, &format!("the key in {PSK_ENV}")).map(Some),
        _ => Ok(None),
    }
}
