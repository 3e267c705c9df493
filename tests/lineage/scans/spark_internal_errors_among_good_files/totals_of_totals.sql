SELECT * FROM daily_totals_of_self_join
