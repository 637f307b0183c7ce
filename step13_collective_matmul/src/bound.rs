//! The model the run is judged against: what each way should take, from the times of its parts
//! measured alone in the same run.
//!
//! The baseline gathers every shard, then multiplies: its parts add up. The ring's round t
//! multiplies one shard while the next one travels, so after the first product each of the
//! G − 1 later rounds lasts at least the slower of a product and an exchange. Nothing can make
//! the ring faster than that: it is the bound the ring's time is set against.

/// The parts of a run, each timed alone on every GPU at once (milliseconds, the slowest GPU's).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Parts {
    /// One shard's product on each GPU: M/G × N/G × K.
    pub product: f64,
    /// One round of the ring's exchange: every GPU sends one shard of A and receives one.
    pub exchange: f64,
    /// NCCL's all-gather of A's shards (the baseline's exchange).
    pub all_gather: f64,
    /// The product of the gathered A on each GPU: M × N/G × K.
    pub whole: f64,
}

/// What bounds the ring's rounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RoundBottleneck {
    /// A product takes longer than an exchange: the exchange hides under it.
    Products,
    /// An exchange takes longer than a product: the product hides under it.
    Exchanges,
}

impl RoundBottleneck {
    /// As the report says it.
    pub fn sentence(self) -> &'static str {
        match self {
            RoundBottleneck::Products => "the products: the exchange hides under them",
            RoundBottleneck::Exchanges => "the exchanges: the products hide under them",
        }
    }
}

// ANCHOR: model
impl Parts {
    /// The baseline, with nothing overlapped: gather, then multiply.
    pub fn baseline(&self) -> f64 {
        self.all_gather + self.whole
    }

    /// The least the ring can take on `ranks` GPUs: its first product, then G − 1 rounds that
    /// each last the slower of a product and an exchange.
    pub fn ring_bound(&self, ranks: usize) -> f64 {
        let later = ranks.saturating_sub(1) as f64;
        self.product + later * self.product.max(self.exchange)
    }

    /// What bounds the ring's rounds: the products, or the exchanges.
    pub fn ring_bottleneck(&self) -> RoundBottleneck {
        match self.product >= self.exchange {
            true => RoundBottleneck::Products,
            false => RoundBottleneck::Exchanges,
        }
    }

    /// The most the ring can gain over the baseline.
    pub fn best_speedup(&self, ranks: usize) -> f64 {
        self.baseline() / self.ring_bound(ranks)
    }
}

/// The time per round the ring spent beyond its bound: what starting each round costs
/// (events, the exchange's launch, the product's first and last waves).
pub fn overhead_per_round(ring: f64, bound: f64, ranks: usize) -> f64 {
    match ranks {
        0 | 1 => 0.0,
        g => (ring - bound) / (g - 1) as f64,
    }
}
// ANCHOR_END: model

#[cfg(test)]
mod tests {
    use super::*;

    const PARTS: Parts = Parts { product: 0.08, exchange: 0.05, all_gather: 0.15, whole: 0.32 };

    #[test]
    fn the_ring_is_bound_by_the_slower_of_product_and_exchange() {
        // Products slower than the exchange: G products.
        assert!((PARTS.ring_bound(4) - 0.32).abs() < 1e-12);
        assert_eq!(PARTS.ring_bottleneck().sentence(), "the products: the exchange hides under them");
        // An exchange slower than a product: one product, then G − 1 exchanges.
        let slow = Parts { exchange: 0.1, ..PARTS };
        assert!((slow.ring_bound(4) - (0.08 + 3.0 * 0.1)).abs() < 1e-12);
        assert_eq!(slow.ring_bottleneck().sentence(), "the exchanges: the products hide under them");
        // One GPU: one product, nothing to exchange.
        assert!((PARTS.ring_bound(1) - 0.08).abs() < 1e-12);
    }

    #[test]
    fn the_baseline_adds_its_parts_and_the_ring_gains_the_gather() {
        assert!((PARTS.baseline() - 0.47).abs() < 1e-12);
        assert!((PARTS.best_speedup(4) - 0.47 / 0.32).abs() < 1e-12);
        assert!((overhead_per_round(0.35, 0.32, 4) - 0.01).abs() < 1e-12);
        assert_eq!(overhead_per_round(0.35, 0.32, 1), 0.0);
    }
}
