// db_client.java - the statements of db_client.c through JDBC and MariaDB
// Connector/J (Debian's libmariadb-java), which speaks the MySQL protocol
// itself in Java (only the wire parser sees it), for test-db.sh's "java"
// scenario. Server-side prepared statements (useServerPrepStmts), and two
// batches the driver pipelines - it sends every statement of a batch before
// it reads the first answer - so the parser must pair answers with commands
// in order. Run as a single source file:
//   java -cp /usr/share/java/mariadb-java-client.jar db_client.java PORT DBNAME
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.Arrays;

public class db_client {
    static final int BATCH = 20; /* statements per batch (check-db-trace.py knows) */

    static void check(boolean ok, String what) {
        if (!ok) {
            System.err.println("db_client.java: " + what + " failed");
            System.exit(1);
        }
    }

    static int count(ResultSet rs) throws SQLException {
        int n = 0;
        while (rs.next())
            n++;
        rs.close();
        return n;
    }

    static void mustFail(Statement s, String sql, String what) {
        try {
            s.execute(sql);
            check(false, what + " (it succeeded)");
        } catch (SQLException e) {
            check(e.getErrorCode() == 1064, what + " (error " + e.getErrorCode() + ", expected 1064)");
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: java -cp CONNECTOR_J_JAR db_client.java PORT DBNAME");
            System.exit(2);
        }
        String url = "jdbc:mariadb://127.0.0.1:" + args[0] + "/?user=root&useServerPrepStmts=true";
        String name = args[1];
        try (Connection c = DriverManager.getConnection(url)) {
            Statement s = c.createStatement();
            s.execute("CREATE DATABASE IF NOT EXISTS " + name);
            c.setCatalog(name);
            s.execute("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(32), score DOUBLE)");

            PreparedStatement ins = c.prepareStatement("INSERT INTO t (id, name, score) VALUES (?, ?, ?)");
            Object[][] rows = {{1, "abc", 2.5}, {2, "O'Brien", null}, {3, null, -1.25}};
            for (Object[] r : rows) {
                ins.setInt(1, (Integer) r[0]);
                if (r[1] == null)
                    ins.setNull(2, Types.VARCHAR);
                else
                    ins.setString(2, (String) r[1]);
                if (r[2] == null)
                    ins.setNull(3, Types.DOUBLE);
                else
                    ins.setDouble(3, (Double) r[2]);
                check(ins.executeUpdate() == 1, "insert " + r[0]);
            }

            PreparedStatement sel = c.prepareStatement("SELECT id, name FROM t WHERE id >= ?");
            sel.setInt(1, 2);
            check(count(sel.executeQuery()) == 2, "2 rows with id >= 2");
            sel.setInt(1, 1);
            check(count(sel.executeQuery()) == 3, "3 rows with id >= 1");

            check(count(s.executeQuery("SELECT id FROM t ORDER BY id")) == 3, "3 ids");
            check(count(s.executeQuery("SELECT name FROM t WHERE name IS NOT NULL")) == 2, "2 names");
            check(s.executeUpdate("UPDATE t SET score = 0 WHERE id <= 2") == 2, "2 rows updated");

            // pipelined: this thread sends the whole batch while a driver
            // thread reads the answers (BATCH EXECUTEs, then BATCH QUERYs)
            PreparedStatement batch = c.prepareStatement("INSERT INTO t (id, name) VALUES (?, ?)");
            int[] ones = new int[BATCH];
            for (int i = 0; i < BATCH; i++) {
                batch.setInt(1, 4 + i);
                batch.setString(2, "r" + (4 + i));
                batch.addBatch();
                ones[i] = 1;
            }
            check(Arrays.equals(batch.executeBatch(), ones), "prepared batch");
            for (int i = 0; i < BATCH; i++)
                s.addBatch("UPDATE t SET score = " + i + " WHERE id = " + (4 + i));
            check(Arrays.equals(s.executeBatch(), ones), "statement batch");

            mustFail(s, "SELEC broken", "syntax error");
            // Connector/J sends no PREPARE for this one: it runs it as text
            // with the parameter in place ("SELEC 1")
            PreparedStatement bad = c.prepareStatement("SELEC ?");
            bad.setInt(1, 1);
            try {
                bad.execute();
                check(false, "prepared syntax error (it succeeded)");
            } catch (SQLException e) {
                check(e.getErrorCode() == 1064, "prepared syntax error");
            }
            ins.close();
            sel.close();
            batch.close();
            s.execute("DROP DATABASE " + name);
        }
    }
}
