CREATE TABLE public.account_names AS SELECT name FROM public.accounts
