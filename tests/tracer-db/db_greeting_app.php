<?php
// db_greeting_app.php - the front end of test-db-greeting.sh's plan check,
// served by `php -S`: each request runs two statements over PDO (mysqlnd,
// TCP to the port in DB_PORT) and answers with the row count.
$pdo = new PDO('mysql:host=127.0.0.1;port=' . getenv('DB_PORT'), 'root', '');
$pdo->query('SELECT 1')->fetchAll();
$n = count($pdo->query('SELECT user FROM mysql.user')->fetchAll());
echo "rows $n\n";
