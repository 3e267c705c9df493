SELECT [id] FROM dbo.orders
