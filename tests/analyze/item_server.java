// item_server.java - a Java app tier for test-analyze-servers.sh: the JDK's
// HttpServer with a pool of 2 handler threads; each GET /item?id=N opens a
// JDBC connection (MariaDB Connector/J, server-side prepared statements),
// reads item N and logs the visit with a batch of 3 INSERTs, which the
// driver pipelines: the handler thread sends them and a driver thread reads
// the answers. Run as a single source file:
//   java -cp CONNECTOR_J_JAR item_server.java HTTP_PORT DB_PORT
import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.concurrent.Executors;

public class item_server {
    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: java -cp CONNECTOR_J_JAR item_server.java HTTP_PORT DB_PORT");
            System.exit(2);
        }
        String url = "jdbc:mariadb://127.0.0.1:" + args[1]
            + "/app?user=web&password=pw&useServerPrepStmts=true";
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", Integer.parseInt(args[0])), 16);
        server.createContext("/item", exchange -> {
            String query = exchange.getRequestURI().getQuery();
            int id = Integer.parseInt(query.substring(query.indexOf('=') + 1));
            String body;
            int status = 200;
            try (Connection c = DriverManager.getConnection(url)) {
                PreparedStatement select = c.prepareStatement("SELECT name FROM items WHERE id = ?");
                select.setInt(1, id);
                ResultSet rs = select.executeQuery();
                body = "item " + id + ": " + (rs.next() ? rs.getString(1) : "none") + "\n";
                PreparedStatement visit = c.prepareStatement("INSERT INTO visits (item, n) VALUES (?, ?)");
                for (int n = 1; n <= 3; n++) {
                    visit.setInt(1, id);
                    visit.setInt(2, n);
                    visit.addBatch();
                }
                visit.executeBatch();
            } catch (SQLException e) {
                body = "error: " + e.getMessage() + "\n";
                status = 500;
            }
            byte[] bytes = body.getBytes();
            exchange.sendResponseHeaders(status, bytes.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(bytes);
            }
        });
        server.setExecutor(Executors.newFixedThreadPool(2));
        server.start();
    }
}
