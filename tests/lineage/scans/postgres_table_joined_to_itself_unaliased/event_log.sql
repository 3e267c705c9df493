INSERT INTO public.event_log
SELECT event_id FROM public.events, public.events
