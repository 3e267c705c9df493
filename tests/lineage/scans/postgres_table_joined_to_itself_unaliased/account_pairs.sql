CREATE TABLE public.account_pairs AS
SELECT id FROM public.accounts JOIN public.accounts ON true
