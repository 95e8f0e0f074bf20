//! Validated names of dependencies and features.

use std::borrow::Borrow;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::Error;

/// The longest id accepted, in bytes.
pub const MAX_ID_LEN: usize = 128;

/// Checks `id` against `[a-z0-9][a-z0-9._-]*` and [`MAX_ID_LEN`].
pub(crate) fn validate(id: &str) -> Result<(), Error> {
    let Some(first) = id.bytes().next() else {
        return Err(Error::invalid_id(id, "it is empty"));
    };
    if id.len() > MAX_ID_LEN {
        return Err(Error::invalid_id(id, "it is longer than 128 bytes"));
    }
    if !(first.is_ascii_lowercase() || first.is_ascii_digit()) {
        return Err(Error::invalid_id(
            id,
            "it must start with a lower-case letter or a digit",
        ));
    }
    if !id
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-'))
    {
        return Err(Error::invalid_id(
            id,
            "only lower-case letters, digits, '.', '_' and '-' are allowed",
        ));
    }
    Ok(())
}

/// Defines a validated name type over [`validate`]; the two name types share the alphabet but
/// not their meaning.
macro_rules! name_type {
    ($(#[$doc:meta])* $name:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(Arc<str>);

        impl $name {
            #[doc = concat!("Validates a ", $what, ".")]
            ///
            /// # Errors
            ///
            /// [`Error::is_invalid_id`] when it is empty, too long, or has a character outside
            /// `[a-z0-9._-]`, or does not start with `[a-z0-9]`.
            pub fn new(name: &str) -> Result<Self, Error> {
                validate(name)?;
                Ok(Self(Arc::from(name)))
            }

            /// As text.
            #[must_use]
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }
        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&*self.0, f)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<&str> for $name {
            type Error = Error;

            fn try_from(id: &str) -> Result<Self, Error> {
                Self::new(id)
            }
        }

        impl TryFrom<String> for $name {
            type Error = Error;

            fn try_from(id: String) -> Result<Self, Error> {
                Self::new(&id)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let s = String::deserialize(deserializer)?;
                Self::new(&s).map_err(serde::de::Error::custom)
            }
        }
    };
}

name_type!(
    /// The id of a dependency: `[a-z0-9][a-z0-9._-]*`, at most 128 bytes.
    ///
    /// Ids appear in URLs, metric labels and log lines, so the alphabet is kept to what needs
    /// no escaping anywhere. Cloning is cheap.
    ///
    /// # Example
    ///
    /// ```
    /// use status_core::DependencyId;
    ///
    /// let id = DependencyId::new("primary-db").unwrap();
    /// assert_eq!(id.as_str(), "primary-db");
    /// assert!(DependencyId::new("Primary DB").is_err());
    /// ```
    DependencyId,
    "dependency id"
);

name_type!(
    /// The name of a feature: the same alphabet as [`DependencyId`], a different thing.
    ///
    /// # Example
    ///
    /// ```
    /// use status_core::FeatureName;
    ///
    /// let name = FeatureName::new("checkout").unwrap();
    /// assert_eq!(name.as_str(), "checkout");
    /// assert!(FeatureName::new("Check out").is_err());
    /// ```
    FeatureName,
    "feature name"
);

name_type!(
    /// The name of a probe [`Group`](crate::Group): the same alphabet as [`DependencyId`].
    ///
    /// # Example
    ///
    /// ```
    /// use status_core::GroupName;
    ///
    /// assert_eq!(GroupName::new("ready").unwrap().as_str(), "ready");
    /// assert!(GroupName::new("Ready!").is_err());
    /// ```
    GroupName,
    "group name"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_documented_alphabet() {
        for id in ["a", "0", "primary-db", "cache.eu_1", "9lives"] {
            assert!(DependencyId::new(id).is_ok(), "{id}");
        }
    }

    #[test]
    fn rejects_everything_else() {
        let too_long = "a".repeat(MAX_ID_LEN + 1);
        for id in [
            "",
            "-db",
            ".db",
            "DB",
            "my db",
            "<script>",
            "é",
            too_long.as_str(),
        ] {
            let err = DependencyId::new(id).unwrap_err();
            assert!(err.is_invalid_id(), "{id}: {err}");
        }
    }

    #[test]
    fn deserializing_validates() {
        assert!(serde_json::from_str::<DependencyId>("\"ok-id\"").is_ok());
        assert!(serde_json::from_str::<DependencyId>("\"Bad Id\"").is_err());
    }
}
