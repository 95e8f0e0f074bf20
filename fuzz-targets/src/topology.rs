//! The simulator's topology language: any text either builds, into any simulation, or is
//! refused with an error that names the whole topology or a word that is in it.

use status_sim::topology::Topology;
use status_sim::Sim;

/// One input (see the module).
pub fn topology(text: &str) {
    if text.len() > 4096 {
        return;
    }
    match Topology::parse(text) {
        Ok(topology) => {
            // It builds, whatever the seed, and parsing it again gives the same answer.
            let mut sim = Sim::new(1);
            let _ = topology.build(&mut sim);
            assert!(Topology::parse(text).is_ok());
        }
        Err(error) => {
            let said = error.to_string();
            assert!(!said.is_empty());
            // "at word N (\"w\"): …" names a word of the text, counted from one.
            if let Some(rest) = said.strip_prefix("at word ") {
                let n: usize = rest
                    .split(' ')
                    .next()
                    .and_then(|n| n.parse().ok())
                    .expect("a word's number");
                let spaced = text
                    .replace('(', " ( ")
                    .replace(')', " ) ")
                    .replace('>', " > ");
                let words = spaced.split_whitespace().count();
                assert!(n >= 1 && n <= words + 1, "word {n} of {words}: {said}");
            }
        }
    }
}
