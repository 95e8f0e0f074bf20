//! Reading a topology's text: the stages and their options, with the error that says where.

// The topology's types and bounds, as topology/mod.rs names them.
#[allow(clippy::wildcard_imports)]
use super::*;

#[derive(Debug, Clone)]
pub(super) enum Stage {
    Server,
    DelayFixed(Ms),
    DelayExponential(f64),
    Cable(Ms),
    Queue(usize),
    Faulty(f64, f64),
    Retry(u32),
    Shed(ShedSettings),
    Cull(CullSettings, (u64, Ms)),
    Balancer {
        how: Pick,
        copies: usize,
        chain: Vec<Stage>,
    },
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Pick {
    Balance(Balance),
    Cascade(LimitChoice, CascadeSettings),
}

impl Stage {
    fn ends_a_chain(&self) -> bool {
        matches!(self, Self::Server | Self::Balancer { .. })
    }
}

pub(super) struct Parser<'a> {
    pub(super) tokens: Vec<&'a str>,
    pub(super) at: usize,
    /// Balancers open around the chain being read.
    pub(super) nesting: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<&'a str> {
        self.tokens.get(self.at).copied()
    }

    fn next(&mut self, expected: &str) -> Result<&'a str, TopologyError> {
        let token = self.peek().ok_or_else(|| {
            TopologyError::whole(format!("the topology ends where {expected} was expected"))
        })?;
        self.at += 1;
        Ok(token)
    }

    fn error(&self, message: impl Into<String>) -> TopologyError {
        let at = self.at.min(self.tokens.len().saturating_sub(1));
        TopologyError::at(at, self.tokens[at], message)
    }

    fn number<T: FromStr>(&mut self, stage: &str, what: &str) -> Result<T, TopologyError> {
        let token = self.next(what)?;
        token.parse().map_err(|_| {
            self.at -= 1;
            self.error(format!("{stage} takes {what}"))
        })
    }

    /// `stage (> stage)*`, ending in a server or a balancer.
    pub(super) fn chain(&mut self) -> Result<Vec<Stage>, TopologyError> {
        let mut chain = Vec::new();
        loop {
            let start = self.at;
            let stage = self.stage()?;
            let last = stage.ends_a_chain();
            chain.push(stage);
            match self.peek() {
                Some(">") if last => {
                    return Err(self.error("nothing may follow a server or a balancer's backends"));
                }
                Some(">") => self.at += 1,
                _ if !last => {
                    self.at = start;
                    return Err(self
                        .error("a chain ends in a `server` or a balancer (`> server` missing?)"));
                }
                _ => return Ok(chain),
            }
        }
    }

    fn stage(&mut self) -> Result<Stage, TopologyError> {
        let word = self.next("a stage")?;
        let stage = match word {
            "server" => Stage::Server,
            "delay-fixed" => Stage::DelayFixed(self.number(word, "a whole number of ms")?),
            "delay-exponential" => Stage::DelayExponential(self.positive(word, "a mean in ms")?),
            "cable" => Stage::Cable(self.number(word, "a whole number of ms")?),
            "queue-exclusive" => Stage::Queue(1),
            "queue-fixed-concurrency" => Stage::Queue(self.count(word)?),
            "faulty" => Stage::Faulty(
                self.positive(
                    word,
                    "a mean time between failures and one to repair, in ms",
                )?,
                self.positive(
                    word,
                    "a mean time between failures and one to repair, in ms",
                )?,
            ),
            "retry" => Stage::Retry(self.count(word)?),
            "shed" => Stage::Shed(self.shed()?),
            "cull" => {
                let (settings, budget) = self.cull()?;
                Stage::Cull(settings, budget)
            }
            "lb-random" | "lb-round-robin" | "lb-p2c" | "lb-min-conn" | "cascade" => {
                if self.nesting >= MAX_DEPTH {
                    self.at -= 1;
                    return Err(
                        self.error(format!("balancers are nested more than {MAX_DEPTH} deep"))
                    );
                }
                let how = self.pick(word)?;
                let copies = self.count(word)?;
                if self.next("`x`")? != "x" {
                    self.at -= 1;
                    return Err(self.error(format!("{word} N is followed by `x (chain)`")));
                }
                if self.next("`(`")? != "(" {
                    self.at -= 1;
                    return Err(self.error(format!("{word} N x is followed by `(chain)`")));
                }
                self.nesting += 1;
                let chain = self.chain()?;
                self.nesting -= 1;
                if self.next("`)`")? != ")" {
                    self.at -= 1;
                    return Err(self.error("`)` expected"));
                }
                Stage::Balancer { how, copies, chain }
            }
            _ => {
                self.at -= 1;
                return Err(self.error("not a stage: server, delay-fixed, delay-exponential, cable, queue-exclusive, queue-fixed-concurrency, faulty, retry, shed, cull, lb-random, lb-round-robin, lb-min-conn, lb-p2c, cascade"));
            }
        };
        Ok(stage)
    }

    /// A whole number, at least 1.
    fn count<T: FromStr + Default + PartialEq>(&mut self, stage: &str) -> Result<T, TopologyError> {
        let n: T = self.number(stage, "a whole number")?;
        if n == T::default() {
            self.at -= 1;
            return Err(self.error(format!("{stage} takes a whole number of at least 1")));
        }
        Ok(n)
    }

    fn positive(&mut self, stage: &str, what: &str) -> Result<f64, TopologyError> {
        let x: f64 = self.number(stage, what)?;
        if !(x.is_finite() && x >= 0.0) {
            self.at -= 1;
            return Err(self.error(format!("{stage} takes {what}, finite and not negative")));
        }
        Ok(x)
    }

    /// `key=value` options (and bare flags) up to the next word that is not one.
    fn options(
        &mut self,
        stage: &str,
        keys: &[&str],
    ) -> Result<Vec<(&'a str, &'a str)>, TopologyError> {
        let mut options = Vec::new();
        while let Some(token) = self.peek() {
            let (key, value) = token.split_once('=').unwrap_or((token, ""));
            if !keys.contains(&key) {
                if token.contains('=') {
                    return Err(self.error(format!(
                        "{stage} has no option {key:?}; it has {}",
                        keys.join(", ")
                    )));
                }
                break;
            }
            options.push((key, value));
            self.at += 1;
        }
        Ok(options)
    }

    /// `value` as a `T`, or an error naming the option (the word before the cursor).
    fn value<T: FromStr>(
        &mut self,
        key: &str,
        value: &str,
        what: &str,
    ) -> Result<T, TopologyError> {
        value.parse().map_err(|_| {
            self.at -= 1;
            let error = self.error(format!("{key}= takes {what}"));
            self.at += 1;
            error
        })
    }

    fn pick(&mut self, word: &str) -> Result<Pick, TopologyError> {
        Ok(match word {
            "lb-random" => Pick::Balance(Balance::Random),
            "lb-round-robin" => Pick::Balance(Balance::RoundRobin),
            "lb-p2c" => Pick::Balance(Balance::PowerOfTwo),
            "lb-min-conn" => {
                let mut settings = MinConn::default();
                for (key, value) in self.options(word, &["hold", "random-ties"])? {
                    match key {
                        "hold" => {
                            settings.error_hold = self.value(key, value, "a whole number of ms")?;
                        }
                        _ => settings.random_ties = true,
                    }
                }
                Pick::Balance(Balance::MinConn(settings))
            }
            _ => {
                let mut limit = LimitChoice::Gradient2;
                let mut settings = CascadeSettings::default();
                for (key, value) in self.options(word, &["limit", "hold", "spread"])? {
                    match key {
                        "limit" => {
                            limit = self.value(key, value, "fixed:N, aimd, gradient2 or vegas")?;
                        }
                        "hold" => settings.hold = self.value(key, value, "a whole number of ms")?,
                        _ => settings.spread = true,
                    }
                }
                Pick::Cascade(limit, settings)
            }
        })
    }

    fn shed(&mut self) -> Result<ShedSettings, TopologyError> {
        let mut settings = ShedSettings::default();
        let keys = ["limit", "queue", "queue-timeout", "deadline", "lifo-after"];
        for (key, value) in self.options("shed", &keys)? {
            let ms = "a whole number of ms";
            match key {
                "limit" => {
                    settings.limit = self.value(key, value, "fixed:N, aimd, gradient2 or vegas")?;
                }
                "queue" => settings.queue = self.value(key, value, "a whole number")?,
                "queue-timeout" => settings.queue_timeout = self.value(key, value, ms)?,
                "deadline" => settings.deadline = self.value(key, value, ms)?,
                _ if value == "off" => settings.lifo_after = None,
                _ => {
                    settings.lifo_after =
                        Some(self.value(key, value, "a whole number of ms or off")?);
                }
            }
        }
        Ok(settings)
    }

    fn cull(&mut self) -> Result<(CullSettings, (u64, Ms)), TopologyError> {
        let mut settings = CullSettings::default();
        let mut budget = (10, 600_000);
        let keys = [
            "threshold",
            "window",
            "interval",
            "min-uptime",
            "restart",
            "budget",
        ];
        for (key, value) in self.options("cull", &keys)? {
            let ms = "a whole number of ms";
            match key {
                "threshold" => settings.threshold = self.value(key, value, "a whole number")?,
                "window" => settings.window = self.value(key, value, ms)?,
                "interval" => settings.interval = self.value(key, value, ms)?,
                "min-uptime" => settings.min_uptime = self.value(key, value, ms)?,
                "restart" => settings.restart = self.value(key, value, ms)?,
                _ => {
                    let (capacity, window) = value.split_once('/').unwrap_or((value, ""));
                    budget = (
                        self.value(key, capacity, "N/MS: N culls per MS")?,
                        self.value(key, window, "N/MS: N culls per MS")?,
                    );
                }
            }
        }
        if settings.interval == 0 || settings.window < 1000 {
            self.at -= 1;
            return Err(self.error(
                "cull takes an interval of at least 1 ms and a window of at least 1000 ms",
            ));
        }
        Ok((settings, budget))
    }
}
