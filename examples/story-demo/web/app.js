/* The story page: written in web/app.js. */
