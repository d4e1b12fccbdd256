//! The one cryptographic act of token validation, a JWS signature check, done by well-kept
//! code on each host: ring natively (already built for the host's TLS; its RSA is several times
//! faster than a pure-Rust one, `cargo xtask bench auth`), the platform's WebCrypto
//! (`crypto.subtle.verify`) in a Worker, which adds nothing to the Worker's script (the
//! RustCrypto RSA and elliptic-curve code would add about a third to it).

use jsonwebtoken::Algorithm;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk};

/// Whether `jwk` is a key `alg` verifies with: its type (and curve) fit the algorithm, and an
/// `alg` the key itself names is the same one (RFC 7517 §4.4).
pub(crate) fn key_fits(alg: Algorithm, jwk: &Jwk) -> bool {
    use jsonwebtoken::jwk::EllipticCurve;
    if let Some(named) = jwk.common.key_algorithm
        && named != jsonwebtoken::jwk::KeyAlgorithm::from(alg)
    {
        return false;
    }
    match (&jwk.algorithm, alg) {
        (
            AlgorithmParameters::RSA(_),
            Algorithm::RS256
            | Algorithm::RS384
            | Algorithm::RS512
            | Algorithm::PS256
            | Algorithm::PS384
            | Algorithm::PS512,
        ) => true,
        (AlgorithmParameters::EllipticCurve(ec), Algorithm::ES256) => {
            ec.curve == EllipticCurve::P256
        }
        (AlgorithmParameters::EllipticCurve(ec), Algorithm::ES384) => {
            ec.curve == EllipticCurve::P384
        }
        (AlgorithmParameters::OctetKeyPair(okp), Algorithm::EdDSA) => {
            okp.curve == EllipticCurve::Ed25519
        }
        _ => false,
    }
}

/// Whether `signature` (base64url, the JWS's third part) signs `message` (its first two parts
/// with the dot) under `jwk` with `alg`.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) async fn verify(
    alg: Algorithm,
    jwk: &Jwk,
    message: &[u8],
    signature: &str,
) -> Result<bool, String> {
    use ring::signature::{self as ring_signature, RsaPublicKeyComponents, UnparsedPublicKey};

    let bytes = |text: &str| {
        base64::Engine::decode(&BASE64URL, text)
            .map_err(|_| "the issuer's key or the signature is not base64url".to_owned())
    };
    let signature = bytes(signature)?;
    let verified = match &jwk.algorithm {
        AlgorithmParameters::RSA(rsa) => {
            let params = match alg {
                Algorithm::RS256 => &ring_signature::RSA_PKCS1_2048_8192_SHA256,
                Algorithm::RS384 => &ring_signature::RSA_PKCS1_2048_8192_SHA384,
                Algorithm::RS512 => &ring_signature::RSA_PKCS1_2048_8192_SHA512,
                Algorithm::PS256 => &ring_signature::RSA_PSS_2048_8192_SHA256,
                Algorithm::PS384 => &ring_signature::RSA_PSS_2048_8192_SHA384,
                Algorithm::PS512 => &ring_signature::RSA_PSS_2048_8192_SHA512,
                _ => return Ok(false),
            };
            let key = RsaPublicKeyComponents {
                n: bytes(&rsa.n)?,
                e: bytes(&rsa.e)?,
            };
            key.verify(params, message, &signature)
        }
        AlgorithmParameters::EllipticCurve(ec) => {
            let params = match alg {
                Algorithm::ES256 => &ring_signature::ECDSA_P256_SHA256_FIXED,
                Algorithm::ES384 => &ring_signature::ECDSA_P384_SHA384_FIXED,
                _ => return Ok(false),
            };
            // The uncompressed point (SEC 1 §2.3.3).
            let point = [vec![4], bytes(&ec.x)?, bytes(&ec.y)?].concat();
            UnparsedPublicKey::new(params, point).verify(message, &signature)
        }
        AlgorithmParameters::OctetKeyPair(okp) => {
            UnparsedPublicKey::new(&ring_signature::ED25519, bytes(&okp.x)?)
                .verify(message, &signature)
        }
        _ => return Ok(false),
    };
    Ok(verified.is_ok())
}

/// base64url with or without padding: what JWS and JWK members are written in.
#[cfg(not(target_arch = "wasm32"))]
const BASE64URL: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    base64::engine::GeneralPurposeConfig::new()
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
);

/// Whether `signature` (base64url, the JWS's third part) signs `message` (its first two parts
/// with the dot) under `jwk` with `alg`.
#[cfg(cloudflare_host)]
pub(crate) async fn verify(
    alg: Algorithm,
    jwk: &Jwk,
    message: &[u8],
    signature: &str,
) -> Result<bool, String> {
    use base64::Engine as _;
    use worker::js_sys::Uint8Array;
    use worker::wasm_bindgen_futures::JsFuture;

    let signature = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(signature)
        .map_err(|_| "the signature is not base64url".to_owned())?;
    let key = serde_json::to_string(jwk).map_err(|error| error.to_string())?;
    let promise = webcrypto::verify_jws(
        &format!("{alg:?}"),
        &key,
        &Uint8Array::from(message),
        &Uint8Array::from(signature.as_slice()),
    );
    let verdict = JsFuture::from(promise)
        .await
        .map_err(|error| format!("WebCrypto refused the key or signature: {error:?}"))?;
    Ok(verdict.as_bool() == Some(true))
}

/// A wasm32 build without the Cloudflare host has no signature checker: every JWT is refused
/// as unverifiable (503), never accepted.
#[cfg(all(target_arch = "wasm32", not(cloudflare_host)))]
pub(crate) async fn verify(_: Algorithm, _: &Jwk, _: &[u8], _: &str) -> Result<bool, String> {
    Err("this build has no signature checker (enable the cloudflare feature)".to_owned())
}

#[cfg(cloudflare_host)]
mod webcrypto {
    use worker::js_sys::{Promise, Uint8Array};
    use worker::wasm_bindgen::{self, prelude::wasm_bindgen};

    // Keys are imported once per isolate (a handful: the issuers' current keys); only the
    // public members are imported, so that a key's `use` or `key_ops` cannot make the import
    // fail.
    #[wasm_bindgen(inline_js = r#"
const imported = new Map();
const RSA = { RS256: "SHA-256", RS384: "SHA-384", RS512: "SHA-512" };
const PSS = { PS256: ["SHA-256", 32], PS384: ["SHA-384", 48], PS512: ["SHA-512", 64] };
const EC = { ES256: ["P-256", "SHA-256"], ES384: ["P-384", "SHA-384"] };
function algorithms(alg) {
  if (RSA[alg]) return [{ name: "RSASSA-PKCS1-v1_5", hash: RSA[alg] }, { name: "RSASSA-PKCS1-v1_5" }];
  if (PSS[alg]) return [{ name: "RSA-PSS", hash: PSS[alg][0] }, { name: "RSA-PSS", saltLength: PSS[alg][1] }];
  if (EC[alg]) return [{ name: "ECDSA", namedCurve: EC[alg][0] }, { name: "ECDSA", hash: EC[alg][1] }];
  if (alg === "EdDSA") return [{ name: "Ed25519" }, { name: "Ed25519" }];
  throw new Error("unsupported algorithm " + alg);
}
export async function verify_jws(alg, jwk, message, signature) {
  const [importing, verifying] = algorithms(alg);
  const id = alg + jwk;
  let key = imported.get(id);
  if (!key) {
    const { kty, n, e, crv, x, y } = JSON.parse(jwk);
    key = await crypto.subtle.importKey("jwk", { kty, n, e, crv, x, y }, importing, false, ["verify"]);
    if (imported.size >= 64) imported.clear();
    imported.set(id, key);
  }
  return crypto.subtle.verify(verifying, key, signature, message);
}
"#)]
    extern "C" {
        /// `crypto.subtle.verify` of `signature` over `message` with the JWK `jwk` for the JWS
        /// algorithm `alg`: a promise of a boolean.
        pub(super) fn verify_jws(
            alg: &str,
            jwk: &str,
            message: &Uint8Array,
            signature: &Uint8Array,
        ) -> Promise;
    }
}
