// db_client.js - db_clients.py's statements through Node.js and the mysql
// module (mysqljs, Debian's node-mysql), which speaks the MySQL protocol in
// JavaScript over libuv's sockets: only the wire parser sees it. For
// test-db.sh's "node" scenario; exits non-zero with a reason when a
// statement does not do what the test expects.
// usage: node db_client.js PORT STATEMENTS.json
//   STATEMENTS.json: [[sql, affected_rows, result_rows|null, error], ...]
//   (db_clients.py json NAME)
"use strict";
const fs = require("fs");
const mysql = require("mysql"); // Debian installs it in /usr/share/nodejs (NODE_PATH)

if (process.argv.length !== 4) {
    console.error("usage: node db_client.js PORT STATEMENTS.json");
    process.exit(2);
}
const statements = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
const conn = mysql.createConnection({host: "127.0.0.1", port: Number(process.argv[2]),
                                     user: "root"});

function fail(what) {
    console.error("db_client.js: " + what);
    process.exit(1);
}

function next(i) {
    if (i === statements.length) {
        conn.end((err) => { if (err) fail("end: " + err.message); });
        return;
    }
    const [sql, affected, resultRows, error] = statements[i];
    conn.query(sql, (err, result) => {
        if (error) {
            if (!err || err.errno !== error)
                fail(sql + ": expected error " + error + ", got " + (err ? err.errno : "success"));
        } else if (err) {
            fail(sql + " failed: " + err.message);
        } else if (resultRows !== null && result.length !== resultRows) {
            fail(sql + " returned " + result.length + " rows, expected " + resultRows);
        } else if (resultRows === null && result.affectedRows !== affected) {
            fail(sql + " affected " + result.affectedRows + " rows, expected " + affected);
        }
        next(i + 1);
    });
}

conn.connect((err) => {
    if (err)
        fail("connect: " + err.message);
    next(0);
});
