//! The contract's words for the engine's enums: order types, directions, times in force, order
//! and transfer statuses, cancel reasons, trigger conditions, candle intervals, liability roots'
//! origin and standing. One home for both ways: the API's parameter checks and parsing, the
//! OpenAPI document's enums, the EIP-712 messages and the JSON renderers all read these, so a
//! new variant is named here once (the matches are exhaustive) and nowhere else.
//!
//! It does not decide what a word means for a request (which parameters are required, what
//! combinations are allowed): the API does.

use crate::{
    CancelReason, CandleInterval, Direction, OrderStatus, OrderType, RootOrigin, RootStanding, TimeInForce,
    TransferStatus, TriggerCondition,
};

/// Names each variant of an enum once and derives the list of names, `wire_name` and
/// `from_wire_name` from it.
macro_rules! wire_names {
    ($(#[$list_doc:meta])* $type:ident, $list:ident { $($variant:ident => $name:literal),+ $(,)? }) => {
        $(#[$list_doc])*
        pub const $list: &[&str] = &[$($name),+];

        impl $type {
            /// The contract's word for this value.
            pub const fn wire_name(self) -> &'static str {
                match self {
                    $($type::$variant => $name),+
                }
            }

            /// The value the contract's word names, if it names one (exact, case-sensitive).
            pub fn from_wire_name(text: &str) -> Option<$type> {
                match text {
                    $($name => Some($type::$variant),)+
                    _ => None,
                }
            }
        }
    };
}

wire_names!(
    /// An order's `type`.
    OrderType, ORDER_TYPE_NAMES { Limit => "limit", Market => "market" }
);
wire_names!(
    /// An order's `direction` (and a trade's `takerDirection`).
    Direction, DIRECTION_NAMES { Buy => "buy", Sell => "sell" }
);
wire_names!(
    /// An order's `timeInForce`.
    TimeInForce, TIME_IN_FORCE_NAMES {
        GoodTillCancelled => "GTC",
        ImmediateOrCancel => "IOC",
        FillOrKill => "FOK",
    }
);
wire_names!(
    /// An order's `status`.
    OrderStatus, ORDER_STATUS_NAMES {
        Open => "open",
        Filled => "filled",
        Cancelled => "cancelled",
        Untriggered => "untriggered",
    }
);
wire_names!(
    /// Why an order was cancelled: its `cancelReason` (`user` for its owner's cancel, cancel all
    /// or amend).
    CancelReason, CANCEL_REASON_NAMES {
        Requested => "user",
        SelfTradePrevention => "selfTrade",
        UnfilledRemainder => "unfilled",
        Switch => "switch",
        OneCancelsOther => "oco",
        Expired => "expired",
        ForcedWithdrawal => "forcedWithdrawal",
    }
);
wire_names!(
    /// A trigger order's `triggerCondition`.
    TriggerCondition, TRIGGER_CONDITION_NAMES { Above => "above", Below => "below" }
);
wire_names!(
    /// A transfer's `status`.
    TransferStatus, TRANSFER_STATUS_NAMES {
        Pending => "pending",
        Sent => "sent",
        Confirmed => "confirmed",
        Failed => "failed",
    }
);
wire_names!(
    /// A candle `interval`, shortest first (the order of [`CandleInterval::ALL`]).
    CandleInterval, CANDLE_INTERVAL_NAMES {
        OneMinute => "1m",
        FiveMinutes => "5m",
        FifteenMinutes => "15m",
        ThirtyMinutes => "30m",
        OneHour => "1h",
        FourHours => "4h",
        OneDay => "1d",
        OneWeek => "1w",
    }
);
wire_names!(
    /// A liability root's `origin`: the venue's own tree, or not.
    RootOrigin, ROOT_ORIGIN_NAMES { Venue => "venue", Foreign => "foreign" }
);
wire_names!(
    /// Where a liability root stands: `standing`.
    RootStanding, ROOT_STANDING_NAMES { Challengeable => "challengeable", Vetoed => "vetoed", Final => "final" }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back_to_the_value_it_names_and_nothing_else_parses() {
        for name in ORDER_TYPE_NAMES {
            assert_eq!(OrderType::from_wire_name(name).map(OrderType::wire_name), Some(*name));
        }
        for name in DIRECTION_NAMES {
            assert_eq!(Direction::from_wire_name(name).map(Direction::wire_name), Some(*name));
        }
        for name in TIME_IN_FORCE_NAMES {
            assert_eq!(
                TimeInForce::from_wire_name(name).map(TimeInForce::wire_name),
                Some(*name)
            );
        }
        for name in ORDER_STATUS_NAMES {
            assert_eq!(
                OrderStatus::from_wire_name(name).map(OrderStatus::wire_name),
                Some(*name)
            );
        }
        for name in TRANSFER_STATUS_NAMES {
            assert_eq!(
                TransferStatus::from_wire_name(name).map(TransferStatus::wire_name),
                Some(*name)
            );
        }
        let intervals: Vec<&str> = CandleInterval::ALL
            .iter()
            .map(|interval| interval.wire_name())
            .collect();
        assert_eq!(intervals, CANDLE_INTERVAL_NAMES);
        for name in CANDLE_INTERVAL_NAMES {
            assert_eq!(
                CandleInterval::from_wire_name(name).map(CandleInterval::wire_name),
                Some(*name)
            );
        }
        for name in CANCEL_REASON_NAMES {
            assert_eq!(
                CancelReason::from_wire_name(name).map(CancelReason::wire_name),
                Some(*name)
            );
        }
        for name in TRIGGER_CONDITION_NAMES {
            assert_eq!(
                TriggerCondition::from_wire_name(name).map(TriggerCondition::wire_name),
                Some(*name)
            );
        }
        for name in ROOT_ORIGIN_NAMES {
            assert_eq!(RootOrigin::from_wire_name(name).map(RootOrigin::wire_name), Some(*name));
        }
        for name in ROOT_STANDING_NAMES {
            assert_eq!(
                RootStanding::from_wire_name(name).map(RootStanding::wire_name),
                Some(*name)
            );
        }
        for wrong in ["", "Limit", "BUY", "gtc", " sell", "open "] {
            assert_eq!(OrderType::from_wire_name(wrong), None);
            assert_eq!(Direction::from_wire_name(wrong), None);
            assert_eq!(TimeInForce::from_wire_name(wrong), None);
            assert_eq!(OrderStatus::from_wire_name(wrong), None);
        }
    }
}
