-- tests/apps/schema.sql - schema and deterministic data of the sample
-- application's database: 2000 customers, 500 products, 8000 orders, every
-- value a function of the row number (no RAND(), no NOW()), so every load
-- gives the same rows and the same query answers. Loaded by db-load.sh.
DROP DATABASE IF EXISTS sample;
CREATE DATABASE sample;
USE sample;
SET SESSION max_recursive_iterations = 100000;

CREATE TABLE customers (
  id INT PRIMARY KEY,
  name VARCHAR(64) NOT NULL,
  region VARCHAR(16) NOT NULL,
  created DATE NOT NULL
) ENGINE=InnoDB;

CREATE TABLE products (
  id INT PRIMARY KEY,
  name VARCHAR(64) NOT NULL,
  category VARCHAR(16) NOT NULL,
  price DECIMAL(10,2) NOT NULL
) ENGINE=InnoDB;

CREATE TABLE orders (
  id INT PRIMARY KEY,
  customer_id INT NOT NULL,
  product_id INT NOT NULL,
  quantity INT NOT NULL,
  amount DECIMAL(12,2) NOT NULL,
  KEY orders_customer (customer_id),
  KEY orders_product (product_id)
) ENGINE=InnoDB;

INSERT INTO customers (id, name, region, created)
SELECT n, CONCAT('customer-', LPAD(n, 5, '0')),
       ELT(1 + n % 5, 'north', 'south', 'east', 'west', 'central'),
       DATE '2020-01-01' + INTERVAL (n * 37 % 1000) DAY
FROM (WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < 2000)
      SELECT n FROM seq) AS s;

INSERT INTO products (id, name, category, price)
SELECT n, CONCAT('product-', LPAD(n, 4, '0')),
       ELT(1 + n * 7 % 6, 'books', 'music', 'garden', 'tools', 'toys', 'food'),
       1 + (n * 7919 % 10000) / 100
FROM (WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < 500)
      SELECT n FROM seq) AS s;

INSERT INTO orders (id, customer_id, product_id, quantity, amount)
SELECT s.n, 1 + s.n * 7919 % 2000, p.id, 1 + s.n % 9, (1 + s.n % 9) * p.price
FROM (WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < 8000)
      SELECT n FROM seq) AS s
JOIN products p ON p.id = 1 + s.n * 104729 % 500;

CREATE USER IF NOT EXISTS 'sample'@'localhost';
CREATE USER IF NOT EXISTS 'sample'@'127.0.0.1';
GRANT ALL PRIVILEGES ON sample.* TO 'sample'@'localhost';
GRANT ALL PRIVILEGES ON sample.* TO 'sample'@'127.0.0.1';
