//! A limit algorithm named in configuration.

use std::fmt;
use std::str::FromStr;

use super::{Aimd, Fixed, Gradient2, Limiter, Vegas};

/// A limit algorithm with its defaults, as a command line or a configuration file names it:
/// `fixed:N`, `aimd`, `gradient2` or `vegas`. Each [`limiter`](Self::limiter) is a fresh one.
///
/// # Example
///
/// ```
/// use status_traffic::limit::LimitChoice;
///
/// let choice: LimitChoice = "fixed:8".parse()?;
/// assert_eq!(choice, LimitChoice::Fixed(8));
/// assert_eq!(choice.limiter().limit(), 8);
/// assert_eq!(choice.to_string(), "fixed:8");
/// assert!("fixed:0".parse::<LimitChoice>().is_err());
/// # Ok::<(), String>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LimitChoice {
    /// [`Fixed`]: at most `N` at a time.
    Fixed(usize),
    /// [`Aimd::default`].
    Aimd,
    /// [`Gradient2::default`].
    Gradient2,
    /// [`Vegas::default`].
    Vegas,
}

impl LimitChoice {
    /// A fresh limiter of this algorithm.
    #[must_use]
    pub fn limiter(self) -> Limiter {
        match self {
            Self::Fixed(n) => Limiter::new(Fixed::new(n)),
            Self::Aimd => Limiter::new(Aimd::default()),
            Self::Gradient2 => Limiter::new(Gradient2::default()),
            Self::Vegas => Limiter::new(Vegas::default()),
        }
    }
}

impl FromStr for LimitChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "aimd" => Ok(Self::Aimd),
            "gradient2" => Ok(Self::Gradient2),
            "vegas" => Ok(Self::Vegas),
            _ => s
                .strip_prefix("fixed:")
                .and_then(|n| n.parse().ok())
                .filter(|&n| n > 0)
                .map(Self::Fixed)
                .ok_or_else(|| format!("{s:?}: use fixed:N (N > 0), aimd, gradient2 or vegas")),
        }
    }
}

impl fmt::Display for LimitChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Fixed(n) => write!(f, "fixed:{n}"),
            Self::Aimd => f.write_str("aimd"),
            Self::Gradient2 => f.write_str("gradient2"),
            Self::Vegas => f.write_str("vegas"),
        }
    }
}
