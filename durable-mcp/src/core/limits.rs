//! Size limits on what the engine stores.

use super::error::EngineError;

/// Limits on stored values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The largest JSON text stored for one value: an input, a step result, an input request or
    /// response, a task result.
    pub max_value_bytes: usize,
    /// The largest JSON text of a status meta object.
    pub max_status_meta_bytes: usize,
}

impl Limits {
    /// 1 MiB per value, 8 KiB per status meta object.
    pub const DEFAULT: Limits = Limits {
        max_value_bytes: 1024 * 1024,
        max_status_meta_bytes: 8 * 1024,
    };

    /// Checks a serialised value against the value limit.
    pub fn check_value(
        &self,
        what: impl FnOnce() -> String,
        json: &str,
    ) -> Result<(), EngineError> {
        if json.len() > self.max_value_bytes {
            return Err(EngineError::ValueTooLarge {
                what: what(),
                size: json.len(),
                limit: self.max_value_bytes,
            });
        }
        Ok(())
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

/// Serialises `value` and checks it against the value limit.
pub fn to_stored_json<T: serde::Serialize + ?Sized>(
    limits: &Limits,
    what: impl Fn() -> String,
    value: &T,
) -> Result<String, EngineError> {
    let json =
        serde_json::to_string(value).map_err(|e| EngineError::not_serialisable(what(), &e))?;
    limits.check_value(what, &json)?;
    Ok(json)
}
