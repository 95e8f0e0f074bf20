//! Topologies written as text, so that a fleet can be modelled without writing Rust: the
//! binary's `status-sim run --topology TEXT`.
//!
//! A topology is a chain of stages from the client down, separated by `>`, ending in a
//! `server` or a balancer. A balancer is followed by its backends: `N x (chain)`, `N`
//! independent copies of a chain. The study's `faulty-retry-min-conn-hold`:
//!
//! ```text
//! retry 3 > lb-min-conn hold=1000 250 x (cable 2 > faulty 20000 1000 > queue-exclusive >
//!     delay-fixed 20 > delay-exponential 100 > server)
//! ```
//!
//! | stage | arguments and options |
//! |---|---|
//! | `server` | |
//! | `delay-fixed DT`, `delay-exponential MEAN`, `cable DT` | milliseconds |
//! | `queue-exclusive`, `queue-fixed-concurrency N` | |
//! | `faulty MTBF MTTR` | milliseconds |
//! | `retry N` | attempts in all |
//! | `shed` | `limit=` (`fixed:N`, `aimd`, `gradient2`, `vegas`), `queue=`, `queue-timeout=`, `deadline=`, `lifo-after=` (ms or `off`) |
//! | `cull` | `threshold=`, `window=`, `interval=`, `min-uptime=`, `restart=`, `budget=N/MS` (cull nodes with the same budget share it) |
//! | `lb-random`, `lb-round-robin`, `lb-p2c` | then `N x (chain)` |
//! | `lb-min-conn` | `hold=MS`, `random-ties`, then `N x (chain)` |
//! | `cascade` | `limit=` (default `gradient2`), `hold=MS` (default 5000; 0: none), `spread` (the weighted order alone), then `N x (chain)` |

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use status_traffic::limit::LimitChoice;

use crate::{
    Balance, BudgetId, CascadeSettings, CullSettings, MinConn, Ms, NodeId, ShedSettings, Sim,
};

mod parse;

use self::parse::{Parser, Pick, Stage};

/// The most nodes a written topology may make.
pub const MAX_NODES: usize = 1_000_000;

/// The most stages a request may pass on its way down a written topology (and the deepest
/// balancers may nest): the simulator follows a request down by recursion.
pub const MAX_DEPTH: usize = 256;

/// Why a topology could not be read: what was expected, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopologyError {
    message: String,
    word: Option<(usize, String)>,
}

impl TopologyError {
    fn at(word: usize, token: &str, message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            word: Some((word + 1, token.to_owned())),
        }
    }

    fn whole(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            word: None,
        }
    }
}

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.word {
            Some((n, token)) => write!(f, "at word {n} ({token:?}): {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for TopologyError {}

/// Builds the topology written in `text` into `sim`; its root.
///
/// # Errors
///
/// When `text` is not a topology (an unknown stage or option, a missing or bad number,
/// unbalanced parentheses, a chain that does not end in a `server` or a balancer), would
/// make more than [`MAX_NODES`] nodes, or would send a request down more than [`MAX_DEPTH`]
/// stages. Nothing is built then.
///
/// # Example
///
/// ```
/// use status_sim::{topology, Load, Sim};
///
/// let mut sim = Sim::new(1);
/// let root = topology::build(&mut sim, "retry 2 > lb-round-robin 2 x (delay-fixed 5 > server)")?;
/// let records = sim.run(root, &Load::every(10, 1));
/// assert!(records.iter().all(|r| r.ok && r.latency() == 5));
///
/// let error = topology::build(&mut Sim::new(1), "retry > server").unwrap_err();
/// assert_eq!(error.to_string(), "at word 2 (\">\"): retry takes a whole number");
/// # Ok::<(), topology::TopologyError>(())
/// ```
pub fn build(sim: &mut Sim, text: &str) -> Result<NodeId, TopologyError> {
    Ok(Topology::parse(text)?.build(sim))
}

/// A topology read from text and checked, ready to build into any number of simulations
/// (one per seed, say) without reading it again.
#[derive(Debug, Clone)]
pub struct Topology {
    chain: Vec<Stage>,
}

impl Topology {
    /// Reads `text`; see [`build`] for the grammar and the errors.
    ///
    /// # Errors
    ///
    /// As [`build`].
    pub fn parse(text: &str) -> Result<Self, TopologyError> {
        let spaced = text
            .replace('(', " ( ")
            .replace(')', " ) ")
            .replace('>', " > ");
        let tokens: Vec<&str> = spaced.split_whitespace().collect();
        if tokens.is_empty() {
            return Err(TopologyError::whole("the topology is empty"));
        }
        let mut parser = Parser {
            tokens,
            at: 0,
            nesting: 0,
        };
        let chain = parser.chain()?;
        if let Some(token) = parser.tokens.get(parser.at) {
            return Err(TopologyError::at(
                parser.at,
                token,
                "nothing may follow the end of the chain (an unmatched `)`?)",
            ));
        }
        let deepest = depth(&chain);
        if deepest > MAX_DEPTH {
            return Err(TopologyError::whole(format!(
                "a request would pass {deepest} stages on its way down, more than {MAX_DEPTH}"
            )));
        }
        let nodes = count(&chain);
        if nodes > MAX_NODES {
            return Err(TopologyError::whole(format!(
                "the topology would make {nodes} nodes, more than {MAX_NODES}"
            )));
        }
        Ok(Self { chain })
    }

    /// Builds it into `sim`; its root.
    pub fn build(&self, sim: &mut Sim) -> NodeId {
        make(sim, &self.chain, &mut HashMap::new())
    }
}

/// The most variants a topology with alternatives may expand to.
pub const MAX_VARIANTS: usize = 64;

/// The topologies `text` stands for: itself, or, with alternatives written `{a,b,c}`
/// anywhere in it, one per combination, to try settings side by side. Each comes with a
/// label made of the words that held alternatives, as chosen (`hold=250`, `hold=250 cable
/// 5`…); a text without alternatives has an empty label.
///
/// # Errors
///
/// An unclosed or empty `{}`, or more than [`MAX_VARIANTS`] combinations.
///
/// # Example
///
/// ```
/// use status_sim::topology::variants;
///
/// let v = variants("lb-min-conn hold={0,1000} 3 x (faulty 200 {50,500} > server)")?;
/// let labels: Vec<&str> = v.iter().map(|(label, _)| label.as_str()).collect();
/// assert_eq!(labels, ["hold=0 50", "hold=0 500", "hold=1000 50", "hold=1000 500"]);
/// assert_eq!(v[3].1, "lb-min-conn hold=1000 3 x (faulty 200 500 > server)");
/// # Ok::<(), status_sim::topology::TopologyError>(())
/// ```
pub fn variants(text: &str) -> Result<Vec<(String, String)>, TopologyError> {
    let groups = text.matches('{').count();
    if groups > MAX_VARIANTS {
        return Err(TopologyError::whole(format!(
            "{groups} sets of alternatives, more than {MAX_VARIANTS}"
        )));
    }
    let Some(open) = text.find('{') else {
        if text.contains('}') {
            return Err(TopologyError::whole("a `}` without its `{`"));
        }
        return Ok(vec![(String::new(), text.to_owned())]);
    };
    let close = text[open..]
        .find('}')
        .map(|at| open + at)
        .ok_or_else(|| TopologyError::whole("a `{` without its `}`"))?;
    let choices: Vec<&str> = text[open + 1..close].split(',').map(str::trim).collect();
    if choices.iter().any(|c| c.is_empty() || c.contains('{')) {
        return Err(TopologyError::whole(format!(
            "alternatives are written {{a,b,c}}, each not empty: {:?}",
            &text[open..=close]
        )));
    }
    // The word around the braces, for the label.
    let word_start = text[..open]
        .rfind(char::is_whitespace)
        .map_or(0, |at| at + 1);
    let word_end = text[close..]
        .find(|c: char| c.is_whitespace() || c == ')' || c == '>')
        .map_or(text.len(), |at| close + at);
    let mut all = Vec::new();
    for choice in choices {
        let chosen = format!("{}{choice}{}", &text[..open], &text[close + 1..]);
        let word = format!(
            "{}{choice}{}",
            &text[word_start..open],
            &text[close + 1..word_end]
        );
        for (rest, text) in variants(&chosen)? {
            // The rest's label names the later words. A word with more alternatives in it
            // is named there, whole.
            let label = match (word.contains('{'), rest.is_empty()) {
                (true, _) => rest,
                (false, true) => word.clone(),
                (false, false) => format!("{word} {rest}"),
            };
            all.push((label, text));
            if all.len() > MAX_VARIANTS {
                return Err(TopologyError::whole(format!(
                    "the alternatives make more than {MAX_VARIANTS} topologies"
                )));
            }
        }
    }
    Ok(all)
}

/// The most stages a request passes on its way down `chain`.
fn depth(chain: &[Stage]) -> usize {
    chain
        .iter()
        .map(|stage| match stage {
            Stage::Balancer { chain, .. } => 1 + depth(chain),
            _ => 1,
        })
        .sum()
}

/// The nodes `chain` makes.
fn count(chain: &[Stage]) -> usize {
    chain
        .iter()
        .map(|stage| match stage {
            Stage::Balancer { copies, chain, .. } => {
                1usize.saturating_add(copies.saturating_mul(count(chain)))
            }
            _ => 1,
        })
        .fold(0usize, usize::saturating_add)
}

fn make(sim: &mut Sim, chain: &[Stage], budgets: &mut HashMap<(u64, Ms), BudgetId>) -> NodeId {
    let (last, above) = chain.split_last().expect("a chain has a stage");
    let mut node = match last {
        Stage::Balancer { how, copies, chain } => {
            let backends: Vec<NodeId> = (0..*copies).map(|_| make(sim, chain, budgets)).collect();
            match *how {
                Pick::Balance(how) => sim.balancer(how, &backends),
                Pick::Cascade(limit, settings) => sim.cascade_with(limit, settings, &backends),
            }
        }
        _ => sim.server(),
    };
    for stage in above.iter().rev() {
        node = match stage {
            Stage::DelayFixed(dt) => sim.delay_fixed(*dt, node),
            Stage::DelayExponential(mean) => sim.delay_exponential(*mean, node),
            Stage::Cable(dt) => sim.cable(*dt, node),
            Stage::Queue(n) => sim.queue_fixed_concurrency(*n, node),
            Stage::Faulty(mtbf, mttr) => sim.faulty(*mtbf, *mttr, node),
            Stage::Retry(n) => sim.retry(*n, node),
            Stage::Shed(settings) => sim.shed(settings.clone(), node),
            Stage::Cull(settings, (capacity, window)) => {
                let budget = *budgets
                    .entry((*capacity, *window))
                    .or_insert_with(|| sim.budget(*capacity, *window));
                sim.cull(*settings, budget, node)
            }
            Stage::Server | Stage::Balancer { .. } => unreachable!("only at the end of a chain"),
        };
    }
    node
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        build(&mut Sim::new(1), text).unwrap_err().to_string()
    }

    #[test]
    fn bad_topologies_say_what_and_where() {
        assert_eq!(error(""), "the topology is empty");
        assert_eq!(
            error("delay-fixed 5"),
            "at word 1 (\"delay-fixed\"): a chain ends in a `server` or a balancer (`> server` missing?)"
        );
        assert_eq!(
            error("server > server"),
            "at word 2 (\">\"): nothing may follow a server or a balancer's backends"
        );
        assert!(error("serverr").starts_with("at word 1 (\"serverr\"): not a stage"));
        assert_eq!(
            error("delay-fixed -3 > server"),
            "at word 2 (\"-3\"): delay-fixed takes a whole number of ms"
        );
        assert_eq!(
            error("retry 0 > server"),
            "at word 2 (\"0\"): retry takes a whole number of at least 1"
        );
        assert_eq!(
            error("lb-random 3 (server)"),
            "at word 3 (\"(\"): lb-random N is followed by `x (chain)`"
        );
        assert_eq!(
            error("lb-random 3 x (server"),
            "the topology ends where `)` was expected"
        );
        assert_eq!(
            error("lb-random 3 x (server))"),
            "at word 7 (\")\"): nothing may follow the end of the chain (an unmatched `)`?)"
        );
        assert_eq!(
            error("lb-min-conn hold=x 2 x (server)"),
            "at word 2 (\"hold=x\"): hold= takes a whole number of ms"
        );
        assert!(
            error("lb-min-conn hod=1 2 x (server)").contains("lb-min-conn has no option \"hod\"")
        );
        assert_eq!(
            error("shed limit=fixed:0 > server"),
            "at word 2 (\"limit=fixed:0\"): limit= takes fixed:N, aimd, gradient2 or vegas"
        );
        assert_eq!(error("faulty 10 NaN > server"), "at word 3 (\"NaN\"): faulty takes a mean time between failures and one to repair, in ms, finite and not negative");
        assert!(error("lb-random 1000 x (lb-random 1001 x (server))").contains("more than 1000000"));
        let nested = format!(
            "{}server{}",
            "lb-random 1 x (".repeat(100_000),
            ")".repeat(100_000)
        );
        assert_eq!(
            error(&nested),
            "at word 1025 (\"lb-random\"): balancers are nested more than 256 deep"
        );
        let long = format!("{}server", "retry 1 > ".repeat(300));
        assert_eq!(
            error(&long),
            "a request would pass 301 stages on its way down, more than 256"
        );
    }

    #[test]
    fn alternatives_expand_to_every_combination() {
        let plain = variants("server").unwrap();
        assert_eq!(plain, [(String::new(), "server".to_owned())]);
        let v = variants("cull budget={1,2}/{100,200} > retry {1,3} > server").unwrap();
        let labels: Vec<&str> = v.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(
            labels,
            [
                "budget=1/100 1",
                "budget=1/100 3",
                "budget=1/200 1",
                "budget=1/200 3",
                "budget=2/100 1",
                "budget=2/100 3",
                "budget=2/200 1",
                "budget=2/200 3",
            ]
        );
        assert_eq!(v[5].1, "cull budget=2/100 > retry 3 > server");
        let error = |text: &str| variants(text).unwrap_err().to_string();
        assert_eq!(error("retry {1,3 > server"), "a `{` without its `}`");
        assert_eq!(error("retry 1} > server"), "a `}` without its `{`");
        assert!(error("retry {1,} > server").contains("each not empty"));
        assert!(error("a{1,2,3,4} b{1,2,3,4} c{1,2,3,4} d{1,2}").contains("more than 64"));
        assert_eq!(
            error(&"retry {1} > ".repeat(100_000)),
            "100000 sets of alternatives, more than 64"
        );
    }

    #[test]
    fn a_written_topology_is_the_built_one() {
        // The study's faulty-retry-min-conn-hold, written and built by hand, give one run.
        let text = "retry 3 > lb-min-conn hold=1000 50 x (cable 2 > faulty 20000 1000 > \
                    queue-exclusive > delay-fixed 20 > delay-exponential 100 > server)";
        let load = crate::Load::poisson(5_000, 7.5);
        let mut written = Sim::new(4);
        let root = build(&mut written, text).unwrap();
        let by_text = written.run(root, &load);
        let mut by_hand = Sim::new(4);
        let dynos = by_hand.pool(50, crate::scenario::faulty_dyno);
        let lb = by_hand.min_conn(
            MinConn {
                random_ties: false,
                error_hold: 1000,
            },
            &dynos,
        );
        let root = by_hand.retry(3, lb);
        assert_eq!(by_text, by_hand.run(root, &load));
    }

    #[test]
    fn options_and_shared_budgets() {
        let text = "lb-min-conn random-ties 4 x (cull threshold=2 interval=50 window=1000 \
                    restart=100 budget=1/60000 > shed limit=fixed:1 queue=1 queue-timeout=10 \
                    deadline=20 lifo-after=off > faulty 0 1e15 > server)";
        let mut sim = Sim::new(2);
        let root = build(&mut sim, text).unwrap();
        let _ = sim.run(root, &crate::Load::every(2_000, 1));
        // Four dead nodes, one budget of one cull a minute for all of them.
        let culled: u64 = (0..root.index())
            .map(|i| sim.counts(NodeId(u32::try_from(i).unwrap())).culled)
            .sum();
        assert_eq!(culled, 1);
    }
}
