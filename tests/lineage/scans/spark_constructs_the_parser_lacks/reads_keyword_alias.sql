SELECT * FROM keyword_alias
