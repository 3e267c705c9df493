SELECT * FROM self_join
