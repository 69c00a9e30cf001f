// tests/tracer-db/pg_client.java PORT TABLE - the PostgreSQL JDBC driver
// (Debian's libpostgresql-jdbc-java: it speaks the protocol itself, in
// Java) running known statements for test-pg.sh: a PreparedStatement
// executed 6 times (the driver names it on the server from its 5th use,
// prepareThreshold), typed parameters, a result set, a syntax error, and a
// batch of 3 INSERTs it pipelines.
import java.sql.*;

public class pg_client {
    public static void main(String[] a) throws Exception {
        String t = a[1];
        try (Connection c = DriverManager.getConnection(
                 "jdbc:postgresql://127.0.0.1:" + a[0] + "/postgres?sslmode=disable",
                 "preplay", "preplay-pw")) {
            try (Statement s = c.createStatement()) {
                s.execute("CREATE TABLE " + t + " (id int, name text, score float8)");
            }
            try (PreparedStatement p =
                     c.prepareStatement("INSERT INTO " + t + " VALUES (?, ?, ?)")) {
                for (int i = 1; i <= 6; i++) {
                    p.setInt(1, i);
                    p.setString(2, i == 2 ? "O'Brien" : "n" + i);
                    if (i == 3)
                        p.setNull(3, Types.DOUBLE);
                    else
                        p.setDouble(3, i + 0.5);
                    p.executeUpdate();
                }
            }
            try (PreparedStatement p =
                     c.prepareStatement("SELECT id, name FROM " + t + " WHERE id <= ?")) {
                p.setInt(1, 4);
                int n = 0;
                try (ResultSet r = p.executeQuery()) {
                    while (r.next())
                        n++;
                }
                if (n != 4)
                    throw new RuntimeException("rows " + n);
            }
            try (Statement s = c.createStatement()) {
                s.execute("SELEC 1");
                throw new RuntimeException("the syntax error was accepted");
            } catch (SQLException e) {
                if (!"42601".equals(e.getSQLState()))
                    throw e;
            }
            try (PreparedStatement p =
                     c.prepareStatement("UPDATE " + t + " SET score = ? WHERE id = ?")) {
                for (int i = 1; i <= 3; i++) {
                    p.setDouble(1, 10 * i);
                    p.setInt(2, i);
                    p.addBatch();
                }
                p.executeBatch();
            }
        }
    }
}
