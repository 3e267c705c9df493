SELECT [id] FROM dbo.orders, dbo.orders
